//! `iofleet run --dry-run`: what a run would do, printed, with nothing touched.
//!
//! The output is the launcher's plan (`Launcher::plan`, the very plan a run
//! materializes): the resolved profile as TOML (save it and run it as a profile file),
//! followed by the fleet layout and the files or device regions as TOML comments, so the
//! whole of stdout is still a profile that runs. Planning makes every check a run makes
//! before it writes (profile, flags, the fleet's totals and the memory they need, target
//! kind, free space, device safety, block sizes against the layout), so they fail the
//! same way, exit 2. Nothing is created, filled or written: no target directory, no disk
//! file, no results store entry, no `--output` file, no agent started. Lanes are counted,
//! never built, and only the first disk files of a host are named, so a dry run stays
//! small whatever the fleet. Remote hosts (`--hosts`) are not contacted, so their device
//! regions (and memory) are not known.

use std::fmt::Write as _;
use std::path::PathBuf;

use iofleet_engine::target::{DiskLayout, TargetSpec, MARKER_LEN};
use iofleet_fleet::host::{HostSpec, Reach, Role, TargetArg};
use iofleet_fleet::plan::{HostShare, LaunchPlan, Placement, Pods, Vms};
use iofleet_profile::{plan_toml, Bytes, FleetTotals, GroupPlan};

use crate::exit::Exit;

/// Disk files or regions listed per target before the rest is summarised.
const LIST_AT_MOST: usize = 32;

/// Print `plan` (from `Fleet::plan`) as a profile followed by the fleet and its
/// placement as comments; a Kubernetes fleet's as the objects it would create followed
/// by the profile, the fleet and its pods as comments.
pub fn print(plan: &LaunchPlan) -> Result<i32, Exit> {
    let groups = &plan.groups;
    let mut out = String::new();
    if let Placement::Pods(pods) = &plan.placement {
        pods_lines(&mut out, plan, pods)?;
    } else if let Placement::Vms(vms) = &plan.placement {
        vms_lines(&mut out, plan, vms)?;
    } else {
        plan_lines(&mut out, groups);
        fleet_lines(&mut out, plan)?;
    }
    match &plan.placement {
        Placement::Here {
            host,
            io_threads,
            memory,
            target,
        } => {
            writeln!(out, "#   host:        {host} (this host)").ok();
            writeln!(out, "#   I/O threads: {io_threads}").ok();
            writeln!(out, "#   memory:      {memory}").ok();
            match target {
                None => {
                    writeln!(
                        out,
                        "# Target: none ({} touches no storage)",
                        plan.settings.engine.name()
                    )
                    .ok();
                }
                Some((target, layout)) => target_lines(&mut out, target, layout),
            }
        }
        Placement::Hosts(hosts) => {
            writeln!(
                out,
                "#   hosts:       {} (not contacted: I/O threads and device regions are decided on each host)",
                hosts.len()
            )
            .ok();
            for (h, share) in hosts {
                host_lines(&mut out, h, share)?;
            }
        }
        Placement::Pods(_) | Placement::Vms(_) => {}
    }
    for n in &plan.notices {
        writeln!(out, "# note: {n}").ok();
    }
    print!("{out}");
    Ok(0)
}

/// The plan(s), as profile TOML.
fn plan_lines(out: &mut String, groups: &[GroupPlan]) {
    writeln!(
        out,
        "# iofleet run --dry-run: the resolved plan as a profile. Nothing was created or written."
    )
    .ok();
    if let [g] = groups {
        writeln!(
            out,
            "# Save this output as a .toml file and run it: iofleet run FILE (with the same --target)."
        )
        .ok();
        writeln!(out, "{}", plan_toml(&g.plan)).ok();
        return;
    }
    writeln!(
        out,
        "# One profile per worker group; save each part as a .toml file and run them together with\n\
         # --group NAME=FILE:WORKERS (each group's workers are given on --group)."
    )
    .ok();
    for g in groups {
        writeln!(
            out,
            "\n# ---- group {} ({} workers): --group {}=FILE:{} ----",
            g.name, g.plan.fleet.workers, g.name, g.plan.fleet.workers
        )
        .ok();
        writeln!(out, "{}", plan_toml(&g.plan)).ok();
    }
}

/// What `groups` add up to (counted, never built), as the plan checked them.
fn totals(groups: &[GroupPlan]) -> Result<FleetTotals, Exit> {
    FleetTotals::of(groups).map_err(Exit::input)
}

/// The fleet: workers per group, disks, lanes, outstanding I/Os, engine.
fn fleet_lines(out: &mut String, plan: &LaunchPlan) -> Result<(), Exit> {
    let groups = &plan.groups;
    let t = totals(groups)?;
    let (lanes, disks, outstanding) = (t.lanes, t.disks, t.in_flight);
    writeln!(out, "# Fleet").ok();
    writeln!(out, "#   workers:     {}", t.workers).ok();
    for g in groups {
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
    writeln!(out, "#   engine:      {}", plan.engine).ok();
    writeln!(
        out,
        "#   direct I/O:  {}",
        if plan.direct { "yes (O_DIRECT)" } else { "no" }
    )
    .ok();
    Ok(())
}

/// How many disk files a directory target gets, and their bytes with the fill markers.
fn files_line(out: &mut String, layout: &[DiskLayout]) {
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

fn target_lines(out: &mut String, target: &TargetSpec, layout: &[DiskLayout]) {
    match target {
        TargetSpec::Dir(d) => {
            let state = if d.is_dir() {
                "exists"
            } else {
                "does not exist yet; the run creates it"
            };
            writeln!(out, "# Target: directory {} ({state})", d.display()).ok();
            files_line(out, layout);
        }
        TargetSpec::Dirs(dirs) => {
            let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            writeln!(
                out,
                "# Target: directories {} (each worker's disks in turn, one directory after another)",
                names.join(" ")
            )
            .ok();
            files_line(out, layout);
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

fn host_lines(out: &mut String, h: &HostSpec, share: &HostShare) -> Result<(), Exit> {
    let (base, count) = (share.base, share.count);
    let via = match h.reach {
        Reach::Ssh { .. } => format!("ssh {}", h.destination),
        Reach::Local => "a local agent process".into(),
        Reach::Kubectl(_) => format!("kubectl exec {}", h.destination),
        Reach::Joined { rank, .. } => format!("the agent that joins as rank {rank}"),
    };
    if h.role == Role::Observer {
        let watches = match &h.target {
            TargetArg::Devices(d) if d.is_empty() => "every disk of the host".to_string(),
            TargetArg::Devices(d) => d.join(" "),
            TargetArg::Dir(dir) => format!("the device under {dir}"),
            TargetArg::Dirs(dirs) => format!("the devices under {}", dirs.join(" ")),
        };
        writeln!(
            out,
            "#   host {} ({via}): observer, runs no I/O; reports CPU, memory, network and {watches}",
            h.name
        )
        .ok();
        if !h.observe.is_empty() {
            writeln!(out, "#     and watches {}", h.observe.join(", ")).ok();
        }
        if let Some(s) = &h.scrape {
            writeln!(
                out,
                "#     and scrapes {} for {}",
                s.url,
                s.metrics.join(", ")
            )
            .ok();
        }
        return Ok(());
    }
    if count == 0 {
        writeln!(out, "#   host {} ({via}): no worker to run", h.name).ok();
        return Ok(());
    }
    let t = totals(&share.groups)?;
    writeln!(
        out,
        "#   host {} ({via}): workers {base}..={}, {} lanes, {} I/Os in flight (its memory is checked on the host)",
        h.name,
        base + count - 1,
        t.lanes,
        t.in_flight
    )
    .ok();
    let dirs: Vec<&str> = match &h.target {
        TargetArg::Dir(dir) => vec![dir.as_str()],
        TargetArg::Dirs(dirs) => dirs.iter().map(String::as_str).collect(),
        TargetArg::Devices(_) => Vec::new(),
    };
    match &h.target {
        TargetArg::Dir(_) | TargetArg::Dirs(_) => {
            // Each group's disks in turn over the directories, as the host plans them:
            // the first few named, the rest counted.
            let mut files = Vec::new();
            for g in &share.groups {
                let lo = g.worker_base;
                let per_worker = g.plan.fleet.disks_per_worker;
                let disks = (0..g.plan.fleet.workers)
                    .flat_map(|w| (0..per_worker).map(move |d| (lo + w, d)))
                    .take(LIST_AT_MOST - files.len().min(LIST_AT_MOST));
                for (k, (w, d)) in disks.enumerate() {
                    let dir = dirs[k % dirs.len()];
                    files.push(
                        PathBuf::from(dir).join(iofleet_engine::target::disk_file_name(w, d)),
                    );
                }
            }
            writeln!(
                out,
                "#     target {} {}: {} disk file(s)",
                if dirs.len() == 1 {
                    "directory"
                } else {
                    "directories"
                },
                dirs.join(" "),
                t.disks
            )
            .ok();
            for f in &files {
                writeln!(out, "#       {}", f.display()).ok();
            }
            if t.disks > files.len() as u64 {
                writeln!(out, "#       ... and {} more", t.disks - files.len() as u64).ok();
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
    Ok(())
}

/// A Kubernetes fleet's plan: the objects iofleet would create, as YAML that `kubectl
/// apply -f -` accepts, then the resolved plan and each pod's share as YAML comments.
/// A fleet of worker VMs: every volume's and domain's XML as libvirt takes it, each
/// after a `# ---- ` line naming it and the hypervisor, then the profile and the fleet
/// as comments.
fn vms_lines(out: &mut String, plan: &LaunchPlan, vms: &Vms) -> Result<(), Exit> {
    let [group] = plan.groups.as_slice() else {
        return Err(Exit::failure("a fleet of VMs' plan has one group"));
    };
    writeln!(
        out,
        "# iofleet run --dry-run on worker VMs: the volumes and domains iofleet would create\n\
         # through libvirt, each document after its '# ---- ' line. Nothing was created and no\n\
         # hypervisor was contacted."
    )
    .ok();
    for (uri, pool, name, bytes, doc) in &vms.volumes {
        writeln!(
            out,
            "# ---- volume {name}: {} MiB in pool {pool} on {uri} (virsh vol-create {pool} FILE) ----",
            bytes >> 20
        )
        .ok();
        out.push_str(doc);
    }
    for ((uri, name, doc), boot) in vms.domains.iter().zip(&vms.boot) {
        writeln!(
            out,
            "# ---- domain {name} on {uri} (virsh define FILE): {boot} ----"
        )
        .ok();
        out.push_str(doc);
    }
    writeln!(out, "# ---- end ----").ok();
    let mut rest = String::new();
    plan_lines(&mut rest, std::slice::from_ref(group));
    for line in rest.lines() {
        if line.starts_with('#') || line.is_empty() {
            writeln!(out, "{line}").ok();
        } else {
            writeln!(out, "# {line}").ok();
        }
    }
    let f = &group.plan.fleet;
    writeln!(out, "# Fleet").ok();
    writeln!(
        out,
        "#   VMs:         {} (each a host running one worker, joining over its channel)",
        vms.hosts.len()
    )
    .ok();
    writeln!(
        out,
        "#   disks:       {} per VM, {} of {} each, {} thread(s) per disk, qd {}",
        f.disks_per_worker,
        vms.hosts.len() as u64 * f.disks_per_worker as u64,
        f.disk_size,
        f.threads_per_disk,
        f.qd
    )
    .ok();
    Ok(())
}

fn pods_lines(out: &mut String, plan: &LaunchPlan, pods: &Pods) -> Result<(), Exit> {
    let [group] = plan.groups.as_slice() else {
        return Err(Exit::failure("a Kubernetes fleet's plan has one group"));
    };
    writeln!(
        out,
        "# iofleet run --dry-run on Kubernetes: the objects iofleet would create, for\n\
         # kubectl apply -f - (which accepts this output as it is). Nothing was created."
    )
    .ok();
    out.push_str(&iofleet_fleet::kube::to_yaml(&pods.objects));
    let mut rest = String::new();
    plan_lines(&mut rest, std::slice::from_ref(group));
    for line in rest.lines() {
        if line.starts_with('#') || line.is_empty() {
            writeln!(out, "{line}").ok();
        } else {
            writeln!(out, "# {line}").ok();
        }
    }
    let f = &group.plan.fleet;
    writeln!(out, "# Fleet").ok();
    writeln!(
        out,
        "#   pods:        {} in namespace {}{} (each a host running one worker)",
        pods.hosts.len(),
        pods.namespace,
        pods.context
            .as_ref()
            .map_or(String::new(), |c| format!(", context {c}"))
    )
    .ok();
    writeln!(
        out,
        "#   volumes:     {} per pod, {} MiB each, {} mode, StorageClass {}",
        f.disks_per_worker,
        pods.volume_bytes >> 20,
        pods.volume_mode,
        pods.storage_class
            .as_deref()
            .unwrap_or("(the cluster's default)")
    )
    .ok();
    writeln!(
        out,
        "#   disks:       {} of {} each, {} thread(s) per disk, qd {}",
        pods.hosts.len() as u64 * f.disks_per_worker as u64,
        f.disk_size,
        f.threads_per_disk,
        f.qd
    )
    .ok();
    for (pod, share) in pods.hosts.iter().take(LIST_AT_MOST) {
        let disks = match &pod.target {
            TargetArg::Dir(d) => std::slice::from_ref(d),
            TargetArg::Dirs(v) | TargetArg::Devices(v) => v.as_slice(),
        };
        writeln!(
            out,
            "#   pod {}: worker {}, disks {}",
            pod.name,
            share.base,
            disks.join(" ")
        )
        .ok();
    }
    if pods.hosts.len() > LIST_AT_MOST {
        writeln!(
            out,
            "#   ... and {} more pods",
            pods.hosts.len() - LIST_AT_MOST
        )
        .ok();
    }
    writeln!(
        out,
        "#   afterwards:  {}",
        if pods.keep {
            "pods and volumes kept for the next run (keep = true)"
        } else {
            "every object above deleted, volumes with them"
        }
    )
    .ok();
    Ok(())
}
