//! What a run ran, for the exports that must say it (CSV, Markdown): one row per worker
//! group and stream with the fleet shape (workers, disks, disk size, threads, qd) and
//! the stream's block sizes, read %, random % and rate cap. The HTML report's workload
//! table reads the same rows. Read from the resolved plan recorded in the result
//! (`run.plan`, the profile crate's `RecordedPlan`: typed, so a renamed plan field is a
//! compile error here, never a silent 0); the JSON export carries that plan itself. Engine and target are run-wide and come from
//! `run.engine` and `run.target`. This module only reads and formats.

use iofleet_profile::{BlockSizes, Plan, RecordedPlan};

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

fn block_sizes(bs: &BlockSizes) -> String {
    match bs.entries.as_slice() {
        [] => "?".into(),
        [(size, _)] => size.to_string(),
        many => many
            .iter()
            .map(|(s, w)| format!("{s}:{w}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn plan_rows(group: &str, plan: &Plan) -> Vec<WorkloadRow> {
    let fleet = &plan.fleet;
    plan.streams
        .iter()
        .map(|s| WorkloadRow {
            group: group.to_string(),
            profile: plan.name.clone(),
            workers: fleet.workers.into(),
            disks_per_worker: fleet.disks_per_worker.into(),
            disk_size_bytes: fleet.disk_size.0,
            threads_per_disk: fleet.threads_per_disk.into(),
            qd: s.qd.unwrap_or(fleet.qd).into(),
            stream: s.name.clone(),
            block_sizes: block_sizes(&s.bs),
            read_pct: s.read_pct,
            random_pct: s.random_pct,
            rate_iops: s.rate_iops.or(plan.timing.rate_iops),
        })
        .collect()
}

/// The workload rows of a recorded plan: per group (when the run had several) and
/// stream.
pub fn rows(plan: &RecordedPlan) -> Vec<WorkloadRow> {
    plan.each_group()
        .into_iter()
        .flat_map(|(name, p, _)| plan_rows(name, p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_profile::{
        Arrival, Bytes, DataPlan, FleetShape, GroupPlan, Locality, Prepare, StreamPlan, Timing,
    };
    use std::time::Duration;

    fn stream(
        name: &str,
        bs: &[(u64, u32)],
        read: f64,
        qd: Option<u32>,
        rate: Option<f64>,
    ) -> StreamPlan {
        StreamPlan {
            name: name.into(),
            bs: BlockSizes {
                entries: bs.iter().map(|&(s, w)| (Bytes(s), w)).collect(),
            },
            read_pct: read,
            random_pct: 100.0,
            align: Bytes(4096),
            weight: rate.is_none().then_some(1),
            rate_iops: rate,
            qd,
            locality: Locality::Uniform,
            working_set_pct: 100.0,
            disks: vec![0],
        }
    }

    fn plan(name: &str, workers: u32, streams: Vec<StreamPlan>, rate: Option<f64>) -> Plan {
        Plan {
            name: name.into(),
            description: String::new(),
            fleet: FleetShape {
                workers,
                disks_per_worker: 8,
                disk_size: Bytes(10 << 30),
                threads_per_disk: 2,
                qd: 1,
                io_threads: None,
                cpus: None,
            },
            timing: Timing {
                prepare: Prepare::Random,
                warmup: Duration::ZERO,
                duration: Duration::from_secs(60),
                interval: Duration::from_secs(1),
                rate_iops: rate,
                arrival: Arrival::Poisson,
                verify: false,
            },
            streams,
            data: DataPlan::default(),
        }
    }

    #[test]
    fn reads_a_recorded_plan() {
        let p = plan(
            "p",
            4,
            vec![
                stream("main", &[(4096, 1)], 70.0, None, None),
                stream("mix", &[(512, 10), (4096, 90)], 100.0, Some(8), Some(500.0)),
            ],
            Some(1000.0),
        );
        let r = rows(&RecordedPlan::new(&p, &[]));
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].group, "p");
        assert_eq!(r[0].block_sizes, "4k");
        assert_eq!(Bytes(r[0].disk_size_bytes).to_string(), "10g");
        assert_eq!(r[0].qd, 1);
        assert_eq!(r[1].block_sizes, "512:10,4k:90");
        assert_eq!(r[1].qd, 8);
        // The plan's cap applies to the closed-loop stream, the rated one keeps its own.
        assert_eq!(r[0].rate_iops, Some(1000.0));
        assert_eq!(r[1].rate_iops, Some(500.0));
    }

    #[test]
    fn groups_each_give_their_rows() {
        let a = plan(
            "pa",
            2,
            vec![stream("s", &[(8192, 1)], 50.0, None, None)],
            None,
        );
        let b = plan(
            "pb",
            1,
            vec![stream("t", &[(262144, 1)], 0.0, None, None)],
            None,
        );
        let groups = [
            GroupPlan {
                name: "a".into(),
                plan: a.clone(),
                worker_base: 0,
            },
            GroupPlan {
                name: "b".into(),
                plan: b,
                worker_base: 2,
            },
        ];
        let recorded = RecordedPlan::new(&a, &groups);
        // The record survives JSON, as the store keeps it.
        let back: RecordedPlan =
            serde_json::from_str(&serde_json::to_string(&recorded).unwrap()).unwrap();
        assert_eq!(back, recorded);
        let r = rows(&back);
        assert_eq!(
            r.iter()
                .map(|w| (w.group.as_str(), w.profile.as_str(), w.workers))
                .collect::<Vec<_>>(),
            [("a", "pa", 2), ("b", "pb", 1)]
        );
        assert_eq!(r[1].block_sizes, "256k");
    }
}
