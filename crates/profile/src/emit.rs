//! Resolved plan → profile TOML: the inverse of `raw` + `validate`.
//!
//! `iofleet run --dry-run` prints the plan a run would use as a profile file: every key
//! written out explicitly (defaults, alignment, weights, each stream's disks), so the
//! printed text, saved and run, resolves to the same [`Plan`] (a test checks this for
//! every built-in profile). This module formats values only; it decides nothing.

use crate::plan::{Arrival, BlockSizes, DataPattern, HotBand, Locality, Plan, Prepare};
use crate::raw::{RawData, RawDisks, RawFleet, RawProfile, RawStream, RawTiming};
use crate::units::format_duration;

/// The profile TOML that resolves to `plan`.
pub fn plan_toml(plan: &Plan) -> String {
    toml::to_string(&raw_of(plan)).expect("a profile always serializes to TOML")
}

/// The raw profile that resolves to `plan` (no key left to a default).
pub fn raw_of(plan: &Plan) -> RawProfile {
    let f = &plan.fleet;
    let t = &plan.timing;
    RawProfile {
        name: Some(plan.name.clone()),
        description: Some(plan.description.clone()),
        fleet: RawFleet {
            workers: Some(f.workers.into()),
            disks_per_worker: Some(f.disks_per_worker.into()),
            disk_size: Some(f.disk_size.to_string()),
            threads_per_disk: Some(f.threads_per_disk.into()),
            qd: Some(f.qd.into()),
            io_threads: f.io_threads.map(i64::from),
            cpus: f.cpus.as_deref().map(cpu_list),
        },
        timing: RawTiming {
            prepare: Some(
                match t.prepare {
                    Prepare::Random => "random",
                    Prepare::Zero => "zero",
                    Prepare::None => "none",
                }
                .into(),
            ),
            warmup: Some(format_duration(t.warmup)),
            duration: Some(format_duration(t.duration)),
            interval: Some(format_duration(t.interval)),
            rate_iops: t.rate_iops,
            verify: t.verify.then_some(true),
            arrival: Some(
                match t.arrival {
                    Arrival::Poisson => "poisson",
                    Arrival::Uniform => "uniform",
                }
                .into(),
            ),
        },
        data: RawData {
            pattern: Some(
                match plan.data.pattern {
                    DataPattern::Random => "random",
                    DataPattern::Zero => "zero",
                }
                .into(),
            ),
            dedupe_ratio: Some(plan.data.dedupe_ratio),
            dedupe_unit: Some(plan.data.dedupe_unit.to_string()),
            compress_ratio: Some(plan.data.compress_ratio),
            write_through: plan.data.write_through.then_some(true),
        },
        streams: plan
            .streams
            .iter()
            .map(|s| {
                let (hot_bands, zipf) = match &s.locality {
                    Locality::Uniform => (None, None),
                    Locality::HotBands { bands } => (Some(hot_bands(bands)), None),
                    Locality::Zipf { theta } => (None, Some(*theta)),
                };
                RawStream {
                    name: Some(s.name.clone()),
                    bs: Some(block_sizes(&s.bs)),
                    read_pct: Some(s.read_pct),
                    random_pct: Some(s.random_pct),
                    align: Some(s.align.to_string()),
                    weight: s.weight.map(i64::from),
                    rate_iops: s.rate_iops,
                    qd: s.qd.map(i64::from),
                    hot_bands,
                    zipf,
                    working_set_pct: Some(s.working_set_pct),
                    disks: Some(RawDisks::List(s.disks.iter().map(|&d| d.into()).collect())),
                }
            })
            .collect(),
        origin: String::new(),
    }
}

/// `4k`, or `512:10,4k:90` for a weighted list.
pub fn block_sizes(bs: &BlockSizes) -> String {
    match bs.entries.as_slice() {
        [(size, 1)] => size.to_string(),
        entries => entries
            .iter()
            .map(|(size, w)| format!("{size}:{w}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn hot_bands(bands: &[HotBand]) -> String {
    bands
        .iter()
        .map(|b| format!("{}/{}", b.io_pct, b.range_pct))
        .collect::<Vec<_>>()
        .join(":")
}

/// `[0, 1, 2, 3, 6]` → `0-3,6`.
fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load_builtin, parse_toml, resolve, Context, Overrides};

    fn round_trip(plan: &Plan, ctx: &Context) {
        let text = plan_toml(plan);
        let raw = parse_toml(&text, "emitted").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let again = resolve(&raw, &Overrides::default(), ctx).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&again, plan, "{text}");
    }

    #[test]
    fn every_builtin_round_trips() {
        let ctx = Context { direct: true };
        for name in crate::builtin_names() {
            let raw = load_builtin(name).unwrap();
            let plan = resolve(&raw, &Overrides::default(), &ctx).unwrap();
            round_trip(&plan, &ctx);
        }
    }

    #[test]
    fn overrides_and_optional_keys_round_trip() {
        let ctx = Context { direct: true };
        let raw = load_builtin("vmfleet-sql").unwrap();
        let ov = Overrides {
            qd: Some(3),
            disks: Some(1),
            io_threads: Some(2),
            cpus: Some("0,2-3".into()),
            rate: None,
            duration: Some(std::time::Duration::from_millis(1500)),
            ..Default::default()
        };
        let plan = resolve(&raw, &ov, &ctx).unwrap();
        assert_eq!(plan.fleet.cpus.as_deref(), Some(&[0, 2, 3][..]));
        round_trip(&plan, &ctx);
        let text = plan_toml(&plan);
        assert!(text.contains("cpus = \"0,2-3\""), "{text}");
        assert!(text.contains("duration = \"1500ms\""), "{text}");
        assert!(text.contains("hot_bands = \"95/5:4/10\""), "{text}");
    }

    #[test]
    fn cpu_lists_and_block_sizes_format() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_list(&[5]), "5");
        let bs = crate::parse_block_sizes("512:10,4k:90").unwrap();
        assert_eq!(block_sizes(&bs), "512:10,4k:90");
        assert_eq!(block_sizes(&BlockSizes::fixed(crate::Bytes(8192))), "8k");
    }
}
