//! How a run on a fleet of worker VMs is described in the table and the HTML report:
//! what it ran on (the fleet, domain type, guest) and, per VM, its hypervisor, size, way
//! to the fleet (defined, running, joined) and each data disk's volume, attachment and
//! the requests the hypervisor counted for it, beside iofleet's own count of them.

use iofleet_stats::result::{RunResult, VmDisk, VmHost, VmRun};

/// The fleet in one line.
pub fn fleet_line(v: &VmRun) -> String {
    format!(
        "VMs: fleet {}, {} VM(s) ({}), guest {}; all joined in {:.1} s; {}",
        v.fleet,
        v.vms.len(),
        if v.domain_type == "qemu" {
            "qemu: software emulation".to_string()
        } else {
            v.domain_type.clone()
        },
        v.guest,
        v.joined_after_s,
        if v.kept {
            "kept for the next run"
        } else {
            "removed at the end"
        }
    )
}

/// A VM's size: vCPUs and memory.
pub fn size(vm: &VmHost) -> String {
    format!("{} vCPU, {} MiB", vm.vcpus, vm.memory_bytes >> 20)
}

/// How a disk is attached: bus, cache and I/O mode.
pub fn attachment(d: &VmDisk) -> String {
    format!("{} cache={} io={}", d.bus, d.cache, d.io)
}

/// The hypervisor's requests of a disk over the run, "reads+writes" ("-": unknown).
pub fn requests(d: &VmDisk) -> String {
    d.requests
        .as_ref()
        .map_or_else(|| "-".into(), |r| format!("{}+{}", r.reads, r.writes))
}

/// The requests iofleet sent data disk `k` of `vm` from the start instant on,
/// "reads+writes": the measured I/Os and errors and what completed outside the measured
/// phase (`unmeasured`), the figure the hypervisor's count is matched against ("-":
/// unknown, a result from before `unmeasured` was recorded).
pub fn iofleet_requests(r: &RunResult, vm: &VmHost, k: usize) -> String {
    let disk = r
        .workers
        .iter()
        .find(|w| w.host == vm.domain)
        .and_then(|w| w.disks.get(k));
    match disk {
        Some(d) if d.unmeasured.is_some() => {
            let u = d.unmeasured.unwrap_or_default();
            format!(
                "{}+{}",
                d.read.ios + d.read.errors + u.warmup_reads + u.after_reads,
                d.write.ios + d.write.errors + u.warmup_writes + u.after_writes
            )
        }
        _ => "-".into(),
    }
}

/// Seconds, one decimal ("-": unknown).
pub fn secs(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{s:.1}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_stats::result::{VmDiskRequests, VmTimeline};

    #[test]
    fn the_fleet_and_a_disk_are_told_in_words() {
        let disk = VmDisk {
            pool: "p".into(),
            volume: "iofleet-a-0-d0".into(),
            bytes: 1 << 20,
            bus: "virtio-blk".into(),
            cache: "none".into(),
            io: "native".into(),
            target: "vda".into(),
            requests: Some(VmDiskRequests {
                reads: 7,
                writes: 3,
            }),
        };
        let vm = VmHost {
            hypervisor: "qemu:///system".into(),
            domain: "iofleet-a-0".into(),
            vcpus: 2,
            memory_bytes: 256 << 20,
            disks: vec![disk.clone()],
            timeline: VmTimeline {
                defined_s: Some(0.5),
                running_s: None,
                joined_s: Some(7.25),
            },
        };
        let run = VmRun {
            fleet: "a".into(),
            domain_type: "qemu".into(),
            guest: "/boot/vmlinuz-6 with iofleet's initramfs".into(),
            joined_after_s: 7.3,
            kept: false,
            vms: vec![vm.clone()],
        };
        assert_eq!(
            fleet_line(&run),
            "VMs: fleet a, 1 VM(s) (qemu: software emulation), guest /boot/vmlinuz-6 with iofleet's initramfs; all joined in 7.3 s; removed at the end"
        );
        assert_eq!(size(&vm), "2 vCPU, 256 MiB");
        assert_eq!(attachment(&disk), "virtio-blk cache=none io=native");
        assert_eq!(requests(&disk), "7+3");
        let unknown = VmDisk {
            requests: None,
            ..disk
        };
        assert_eq!(requests(&unknown), "-");
        assert_eq!(
            (secs(vm.timeline.running_s), secs(vm.timeline.joined_s)),
            ("-".to_string(), "7.2".to_string())
        );
    }
}
