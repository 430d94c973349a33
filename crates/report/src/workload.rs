//! What a run ran, for the exports that must say it (CSV, Markdown): one row per worker
//! group and stream with the fleet shape (workers, disks, disk size, threads, qd) and
//! the stream's block sizes, read %, random % and rate cap. The HTML report's workload
//! table reads the same rows. Read from the resolved plan recorded
//! in the result (`run.plan`), so runs stored by any earlier iofleet show it too; the
//! JSON export carries that plan itself. Engine and target are run-wide and come from
//! `run.engine` and `run.target`. This module only reads and formats.

use serde_json::Value;

/// One group × stream of a run's resolved plan.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRow {
    /// The worker group (the profile's name for a single-profile run).
    pub group: String,
    pub profile: String,
    pub workers: u64,
    pub disks_per_worker: u64,
    pub disk_size_bytes: u64,
    pub threads_per_disk: u64,
    /// I/Os each thread keeps outstanding (the stream's own qd where it sets one).
    pub qd: u64,
    pub stream: String,
    /// `4k`, or a weighted list `512:10,4k:60` (the `--bs` syntax).
    pub block_sizes: String,
    pub read_pct: f64,
    pub random_pct: f64,
    /// The stream's rate in IOPS per worker: its own (open loop), else the plan's cap on
    /// the closed-loop streams; None when it runs as fast as it can.
    pub rate_iops: Option<f64>,
}

/// Shortest exact binary size: 4096 → `4k`, 1536 → `1536` (as profiles write sizes).
pub fn size_text(v: u64) -> String {
    for (unit, suffix) in [
        (1u64 << 40, "t"),
        (1 << 30, "g"),
        (1 << 20, "m"),
        (1 << 10, "k"),
    ] {
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{}{suffix}", v / unit);
        }
    }
    v.to_string()
}

fn block_sizes(bs: &Value) -> String {
    let entries: Vec<(u64, u64)> = bs["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e.get(0)?.as_u64()?, e.get(1)?.as_u64()?)))
        .collect();
    match entries.as_slice() {
        [] => "?".into(),
        [(size, _)] => size_text(*size),
        many => many
            .iter()
            .map(|(s, w)| format!("{}:{w}", size_text(*s)))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn plan_rows(group: &str, plan: &Value) -> Vec<WorkloadRow> {
    let fleet = &plan["fleet"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let profile = plan["name"].as_str().unwrap_or("").to_string();
    plan["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| WorkloadRow {
            group: group.to_string(),
            profile: profile.clone(),
            workers: n(&fleet["workers"]),
            disks_per_worker: n(&fleet["disks_per_worker"]),
            disk_size_bytes: n(&fleet["disk_size"]),
            threads_per_disk: n(&fleet["threads_per_disk"]),
            qd: s["qd"].as_u64().unwrap_or_else(|| n(&fleet["qd"])),
            stream: s["name"].as_str().unwrap_or("").to_string(),
            block_sizes: block_sizes(&s["bs"]),
            read_pct: s["read_pct"].as_f64().unwrap_or(0.0),
            random_pct: s["random_pct"].as_f64().unwrap_or(0.0),
            rate_iops: s["rate_iops"]
                .as_f64()
                .or_else(|| plan["timing"]["rate_iops"].as_f64()),
        })
        .collect()
}

/// The workload rows of a recorded plan: per group (when the run had several) and
/// stream.
pub fn rows(plan: &Value) -> Vec<WorkloadRow> {
    match plan.get("groups").and_then(|g| g.as_array()) {
        Some(groups) => groups
            .iter()
            .flat_map(|g| plan_rows(g["name"].as_str().unwrap_or(""), &g["plan"]))
            .collect(),
        None => plan_rows(plan["name"].as_str().unwrap_or(""), plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_recorded_plan() {
        let plan = serde_json::json!({
            "name": "p",
            "fleet": {"workers": 4, "disks_per_worker": 8, "disk_size": 10737418240u64,
                      "threads_per_disk": 2, "qd": 1},
            "streams": [
                {"name": "main", "bs": {"entries": [[4096, 1]]}, "read_pct": 70.0,
                 "random_pct": 30.0, "qd": null},
                {"name": "mix", "bs": {"entries": [[512, 10], [4096, 90]]}, "read_pct": 100.0,
                 "random_pct": 100.0, "qd": 8, "rate_iops": 500.0}
            ],
            "timing": {"rate_iops": 1000.0}
        });
        let r = rows(&plan);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].group, "p");
        assert_eq!(r[0].block_sizes, "4k");
        assert_eq!(size_text(r[0].disk_size_bytes), "10g");
        assert_eq!(r[0].qd, 1);
        assert_eq!(r[1].block_sizes, "512:10,4k:90");
        assert_eq!(r[1].qd, 8);
        // The plan's cap applies to the closed-loop stream, the rated one keeps its own.
        assert_eq!(r[0].rate_iops, Some(1000.0));
        assert_eq!(r[1].rate_iops, Some(500.0));
        assert_eq!(size_text(1536), "1536");
    }

    #[test]
    fn groups_each_give_their_rows() {
        let plan = serde_json::json!({
            "name": "a+b",
            "fleet": {}, "streams": [],
            "groups": [
                {"name": "a", "plan": {"name": "pa", "fleet": {"workers": 2}, "streams": [
                    {"name": "s", "bs": {"entries": [[8192, 1]]}, "read_pct": 50.0, "random_pct": 100.0}]}},
                {"name": "b", "plan": {"name": "pb", "fleet": {"workers": 1}, "streams": [
                    {"name": "t", "bs": {"entries": [[262144, 1]]}, "read_pct": 0.0, "random_pct": 0.0}]}}
            ]
        });
        let r = rows(&plan);
        assert_eq!(
            r.iter()
                .map(|w| (w.group.as_str(), w.profile.as_str(), w.workers))
                .collect::<Vec<_>>(),
            [("a", "pa", 2), ("b", "pb", 1)]
        );
        assert_eq!(r[1].block_sizes, "256k");
    }
}
