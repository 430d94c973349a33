//! Pools that expose existing LUNs instead of creating volumes: libvirt's `iscsi`,
//! `iscsi-direct`, `scsi` and `mpath` pools list the logical units a target or an
//! adapter already has, and cannot create or delete one. A VM fleet on such a pool uses
//! its LUNs as they are: per hypervisor, its VMs in rank order take the pool's LUNs in
//! their natural order (`unit:0:0:2` before `unit:0:0:10`), `disks` each; a LUN of no
//! capacity (a target's controller LUN) is skipped. Nothing is created and nothing is
//! deleted at the end. Whether a LUN may be written is decided as for any device: the
//! agent in the guest refuses a disk with a file system or partition signature unless
//! the command has `--destroy-data` (docs/vms.md).

use std::collections::BTreeMap;

use super::hypervisor::Hypervisor;
use super::VmSlot;

/// The pool types whose volumes are LUNs that exist already.
pub const LUN_POOLS: &[&str] = &["iscsi", "iscsi-direct", "scsi", "mpath"];

/// Whether a pool of libvirt type `pool_type` only exposes existing LUNs.
pub fn exposes_luns(pool_type: &str) -> bool {
    LUN_POOLS.contains(&pool_type)
}

/// A name cut into its text and its numbers, for a natural order.
fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                key.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    let n = if digits.is_empty() {
        0
    } else {
        digits.parse().unwrap_or(u64::MAX)
    };
    key.push((text, n));
    key
}

/// The LUNs each VM of `layout` takes on the hypervisors whose pool `pool` exposes LUNs
/// (`Some(capacity per LUN)` for those, `None` for pools that create volumes), with
/// `layout`'s volume names replaced by the LUNs'. Every LUN must hold `bytes`. An
/// error names `vms.pool`, the hypervisor and what is missing.
pub fn assign(
    layout: &mut [VmSlot],
    hypervisors: &[Box<dyn Hypervisor>],
    pool: &str,
    bytes: u64,
) -> Result<Vec<Option<BTreeMap<String, u64>>>, String> {
    let mut out = Vec::with_capacity(hypervisors.len());
    for (h, hv) in hypervisors.iter().enumerate() {
        let kind = hv
            .pool_type(pool)
            .map_err(|e| format!("vms.pool: '{pool}' on {}: {e}", hv.name()))?;
        if !exposes_luns(&kind) {
            out.push(None);
            continue;
        }
        let mut luns: Vec<(String, u64)> = hv
            .volume_sizes(pool)
            .map_err(|e| format!("vms.pool: '{pool}' on {}: {e}", hv.name()))?
            .into_iter()
            .filter(|(_, size)| *size > 0)
            .collect();
        luns.sort_by_key(|(name, _)| natural_key(name));
        let slots: Vec<&mut VmSlot> = layout.iter_mut().filter(|s| s.hypervisor == h).collect();
        let wanted: usize = slots.iter().map(|s| s.volumes.len()).sum();
        if luns.len() < wanted {
            return Err(format!(
                "vms.pool: '{pool}' on {} is a {kind} pool, whose LUNs are used as they are: it has {} LUN(s), the fleet's {} VM(s) there need {wanted}",
                hv.name(),
                luns.len(),
                slots.len()
            ));
        }
        let mut next = luns.iter();
        let mut taken = BTreeMap::new();
        for slot in slots {
            for v in slot.volumes.iter_mut() {
                let (name, size) = next.next().expect("counted above");
                if *size < bytes {
                    return Err(format!(
                        "vms.pool: '{pool}' on {}: LUN {name} holds {size} bytes, less than the {bytes} a data disk needs (the profile's disk size and iofleet's fill marker)",
                        hv.name()
                    ));
                }
                *v = name.clone();
                taken.insert(name.clone(), *size);
            }
        }
        out.push(Some(taken));
    }
    Ok(out)
}

/// What the user is told of each hypervisor whose pool exposes LUNs: which are used.
pub fn notices(
    luns: &[Option<BTreeMap<String, u64>>],
    hypervisors: &[Box<dyn Hypervisor>],
    pool: &str,
) -> Vec<String> {
    luns.iter()
        .zip(hypervisors)
        .filter_map(|(taken, hv)| {
            let names: Vec<&str> = taken.as_ref()?.keys().map(String::as_str).collect();
            Some(format!(
                "vms.pool: '{pool}' on {} exposes existing LUNs: the data disks are {} as they are; nothing is created or deleted in it",
                hv.name(),
                names.join(", ")
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luns_go_in_their_natural_order() {
        let mut names = vec!["unit:0:0:10", "unit:0:0:2", "unit:0:0:1", "unit:0:1:0"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(
            names,
            ["unit:0:0:1", "unit:0:0:2", "unit:0:0:10", "unit:0:1:0"]
        );
        assert!(exposes_luns("iscsi-direct") && exposes_luns("mpath"));
        assert!(!exposes_luns("dir") && !exposes_luns("logical"));
    }
}
