//! How a run on a Kubernetes fleet is described in the table and the HTML report: what
//! it ran on (fleet, namespace, image, StorageClass and its provisioner, parameters,
//! binding and reclaim policy) and, per pod, its node and volumes with the time the
//! storage took to provision each one.

use iofleet_stats::result::{KubePod, KubeRun};

/// The fleet in one line, then the StorageClass in one line.
pub fn fleet_lines(k: &KubeRun, pods: usize) -> Vec<String> {
    let mut lines = vec![format!(
        "Kubernetes: fleet {} in namespace {}{}, image {}, {} {} volumes; {pods} pods Ready in {:.1} s{}; {}",
        k.fleet,
        k.namespace,
        k.context
            .as_ref()
            .map_or(String::new(), |c| format!(" (context {c})")),
        k.image,
        k.volume_mode,
        if k.reused { "reused" } else { "new" },
        k.ready_after_s,
        if k.reused {
            " (objects kept by an earlier run)"
        } else {
            ""
        },
        if k.kept {
            "kept for the next run"
        } else {
            "deleted at the end"
        }
    )];
    lines.push(match &k.storage_class {
        Some(sc) => {
            let params: Vec<String> = sc
                .parameters
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "StorageClass {}: provisioner {}, binding {}, reclaim {}{}",
                sc.name,
                sc.provisioner,
                sc.volume_binding_mode.as_deref().unwrap_or("-"),
                sc.reclaim_policy.as_deref().unwrap_or("-"),
                if params.is_empty() {
                    String::new()
                } else {
                    format!(", parameters {}", params.join(" "))
                }
            )
        }
        None => "StorageClass: not readable (see the notices)".into(),
    });
    if k.mode.as_deref() == Some("job") {
        lines.insert(
            1,
            format!(
                "Job mode: an Indexed Job whose pods' agents joined the controller{}",
                k.joined_after_s
                    .map_or(String::new(), |s| format!(", all {pods} in {s:.1} s"))
            ),
        );
    }
    lines
}

/// A pod's volumes' time to bind: the least and the most, seconds (None: unknown).
pub fn bind_range(p: &KubePod) -> Option<(f64, f64)> {
    let known: Vec<f64> = p.volumes.iter().filter_map(|v| v.bound_after_s).collect();
    let lo = known.iter().copied().reduce(f64::min)?;
    let hi = known.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}
