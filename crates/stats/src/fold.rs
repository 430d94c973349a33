//! The one fold from per-worker totals to a result's streams, workers, hosts and groups.
//!
//! The controller folds what its sources reported and the store folds what it recorded;
//! both call [`Layout::fold`], so a stored run recomputed from its histograms and the
//! live result cannot drift apart: same sums, same percentiles, same straggler rule.

use crate::brief::{briefs_of, HostBrief, Relayed};
use crate::result::{
    is_straggler, DiskSummary, GroupSummary, HostSummary, PartIntervals, PartRow, StreamSummary,
    WorkerSummary,
};
use crate::summary::median;
use crate::{HostResources, OpSummary, Sample};

/// One worker group as the fold needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRange {
    pub name: String,
    pub profile: String,
    /// Global index of the group's first worker, and its number of workers.
    pub first: u32,
    pub workers: u32,
    /// IOPS each worker is scheduled to issue when every stream of the group is
    /// rate-limited (None: some stream runs closed-loop, as fast as it can).
    pub rate_per_worker: Option<f64>,
}

impl GroupRange {
    pub fn contains(&self, worker: u32) -> bool {
        (self.first..self.first + self.workers).contains(&worker)
    }
}

/// Where workers live: the names the fold gives its rows.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub streams: Vec<String>,
    pub hosts: Vec<String>,
    /// Global index of the first worker folded.
    pub worker_base: u32,
    /// The host (index into `hosts`) of each worker, by local worker index.
    pub worker_host: Vec<usize>,
    pub groups: Vec<GroupRange>,
}

/// What is known of a host besides its I/O: facts of the live run.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    pub start_late_ms: Option<f64>,
    pub lost_at_s: Option<f64>,
    pub resources: Option<HostResources>,
    /// The host runs no I/O and only reports what it spends.
    pub observer: bool,
    /// A pod of a Kubernetes fleet: its node and volumes.
    pub kubernetes: Option<crate::result::KubePod>,
}

/// The folded figures.
#[derive(Debug, Clone)]
pub struct Folded {
    /// Every worker's total, merged.
    pub fleet: Sample,
    pub streams: Vec<StreamSummary>,
    pub workers: Vec<WorkerSummary>,
    pub hosts: Vec<HostSummary>,
    pub groups: Vec<GroupSummary>,
    /// Each host's workers' totals merged, in the order of `hosts` (with their
    /// histograms, which the summaries do not keep).
    pub host_totals: Vec<Sample>,
    /// Each group's workers' totals merged, in the order of `groups`.
    pub group_totals: Vec<Sample>,
}

/// One interval per host and per group (`Layout::interval_parts`).
#[derive(Debug, Clone)]
pub struct IntervalParts {
    /// Per host (layout order): its workers' samples merged (empty for a host below a
    /// relay), its brief (of that sample, or as its relay sent it: every host's figures),
    /// its workers, and whether it fell behind its peers over the interval.
    pub hosts: Vec<Sample>,
    pub briefs: Vec<HostBrief>,
    pub host_workers: Vec<u32>,
    pub straggler: Vec<bool>,
    /// Per group (layout order): its workers' samples merged.
    pub groups: Vec<Sample>,
}

/// Running sums of a fold, filled one worker total at a time.
struct Sums {
    fleet: Sample,
    host_totals: Vec<Sample>,
    host_workers: Vec<u32>,
    /// Per host and group: I/Os and workers, for the straggler rule.
    host_group: Vec<Vec<(u64, u32)>>,
    group_totals: Vec<Sample>,
}

/// A total summarised over `elapsed_s`: all, read and write operations.
fn op_summaries(s: &Sample, elapsed_s: f64) -> (OpSummary, OpSummary, OpSummary) {
    (
        OpSummary::from_ops(&s.all(), elapsed_s),
        OpSummary::from_ops(&s.read(), elapsed_s),
        OpSummary::from_ops(&s.write(), elapsed_s),
    )
}

impl Layout {
    /// Fold per-worker totals (in local worker order) measured over `elapsed_s`, each
    /// with its per-disk totals (disk order; empty when not known). Each total is taken
    /// once, summarised, and added to the fleet, its host and its group; its disks are
    /// summarised under its worker. `facts` is indexed like `hosts` (missing entries:
    /// nothing known).
    pub fn fold(
        &self,
        totals: impl IntoIterator<Item = (Sample, Vec<Sample>)>,
        facts: &[HostFacts],
        elapsed_s: f64,
    ) -> Folded {
        self.fold_with(totals, &[], facts, elapsed_s)
    }

    /// `fold`, with `groups` (per group, in layout order; fewer entries: nothing more)
    /// added to the fleet's and the groups' totals but to no worker's or host's: what
    /// relays measured for hosts lost with them before their totals came.
    pub fn fold_with(
        &self,
        totals: impl IntoIterator<Item = (Sample, Vec<Sample>)>,
        groups: &[Sample],
        facts: &[HostFacts],
        elapsed_s: f64,
    ) -> Folded {
        let mut sums = self.empty_sums();
        let mut workers = Vec::new();
        for (w, (s, disks)) in totals.into_iter().enumerate() {
            let global = self.worker_base + w as u32;
            let h = self.worker_host.get(w).copied().unwrap_or(0);
            workers.push(self.worker_summary(global, h, &s, &disks, elapsed_s));
            self.add_to_sums(&mut sums, global, h, &s);
        }
        for (sum, g) in sums.group_totals.iter_mut().zip(groups) {
            *sum += g;
            sums.fleet += g;
        }
        let streams = self.stream_summaries(&sums.fleet, elapsed_s);
        let hosts = self.host_summaries(&sums, facts, elapsed_s);
        let groups = self.group_summaries(&sums.group_totals, elapsed_s);
        Folded {
            fleet: sums.fleet,
            streams,
            workers,
            hosts,
            groups,
            host_totals: sums.host_totals,
            group_totals: sums.group_totals,
        }
    }

    /// Zeroed sums for the fleet, every host and every group of this layout.
    fn empty_sums(&self) -> Sums {
        let n_streams = self.streams.len();
        Sums {
            fleet: Sample::new(n_streams),
            host_totals: vec![Sample::new(n_streams); self.hosts.len()],
            host_workers: vec![0u32; self.hosts.len()],
            host_group: vec![vec![(0u64, 0u32); self.groups.len()]; self.hosts.len()],
            group_totals: vec![Sample::new(n_streams); self.groups.len()],
        }
    }

    /// One worker's row: its total and its disks summarised, under its host's name.
    fn worker_summary(
        &self,
        global: u32,
        h: usize,
        s: &Sample,
        disks: &[Sample],
        elapsed_s: f64,
    ) -> WorkerSummary {
        let (all, read, write) = op_summaries(s, elapsed_s);
        WorkerSummary {
            worker: global,
            host: self.hosts.get(h).cloned().unwrap_or_default(),
            all,
            read,
            write,
            // Disks up to the last one that did any I/O (or failed one): the live
            // run hears from every disk, the store keeps only disks that did
            // something, and both list the same disks this way.
            disks: disks[..disks
                .iter()
                .rposition(|d| d.ios() + d.errors() > 0)
                .map_or(0, |last| last + 1)]
                .iter()
                .enumerate()
                .map(|(d, ds)| {
                    let (all, read, write) = op_summaries(ds, elapsed_s);
                    DiskSummary {
                        disk: d as u32,
                        all,
                        read,
                        write,
                        unmeasured: None,
                    }
                })
                .collect(),
        }
    }

    /// Add one worker's total to the fleet, its host and every group holding it.
    fn add_to_sums(&self, sums: &mut Sums, global: u32, h: usize, s: &Sample) {
        sums.fleet += s;
        if h < self.hosts.len() {
            sums.host_totals[h] += s;
            sums.host_workers[h] += 1;
        }
        for (g, range) in self.groups.iter().enumerate() {
            if range.contains(global) {
                sums.group_totals[g] += s;
                if h < self.hosts.len() {
                    sums.host_group[h][g].0 += s.ios();
                    sums.host_group[h][g].1 += 1;
                }
            }
        }
    }

    /// One row per stream, from the fleet's per-stream sums.
    fn stream_summaries(&self, fleet: &Sample, elapsed_s: f64) -> Vec<StreamSummary> {
        self.streams
            .iter()
            .zip(&fleet.streams)
            .map(|(name, s)| StreamSummary {
                name: name.clone(),
                all: OpSummary::from_ops(&s.all(), elapsed_s),
                read: OpSummary::from_ops(&s.read, elapsed_s),
                write: OpSummary::from_ops(&s.write, elapsed_s),
            })
            .collect()
    }

    /// One row per host: its sums, its facts and the straggler verdict.
    fn host_summaries(&self, sums: &Sums, facts: &[HostFacts], elapsed_s: f64) -> Vec<HostSummary> {
        let lost: Vec<bool> = (0..self.hosts.len())
            .map(|h| facts.get(h).is_some_and(|f| f.lost_at_s.is_some()))
            .collect();
        let ratios = self.host_ratios(&sums.host_group, &lost, elapsed_s);
        let none = HostFacts::default();
        let fact = |h: usize| facts.get(h).unwrap_or(&none);
        let earliest = (0..self.hosts.len())
            .filter_map(|h| fact(h).start_late_ms)
            .reduce(f64::min)
            .unwrap_or(0.0);
        self.hosts
            .iter()
            .enumerate()
            .map(|(h, name)| {
                let f = fact(h);
                let (all, read, write) = op_summaries(&sums.host_totals[h], elapsed_s);
                let res = f.resources.as_ref();
                HostSummary {
                    host: name.clone(),
                    workers: sums.host_workers[h],
                    all,
                    read,
                    write,
                    start_late_ms: f.start_late_ms,
                    lost_at_s: f.lost_at_s,
                    observer: f.observer,
                    // A straggler started late or delivered clearly less than its peers.
                    straggler: is_straggler(
                        f.lost_at_s.is_some(),
                        self.hosts.len(),
                        f.start_late_ms,
                        earliest,
                        ratios[h],
                        1.0,
                    ),
                    cpu: res.map(|r| r.cpu.clone()),
                    memory: res.map(|r| r.memory.clone()),
                    net: res.map(|r| r.net.clone()),
                    disk: res.and_then(|r| r.disk.clone()),
                    storage: res.map(|r| r.storage.clone()).unwrap_or_default(),
                    scraped: res.map(|r| r.scraped.clone()).unwrap_or_default(),
                    kubernetes: f.kubernetes.clone(),
                }
            })
            .collect()
    }

    /// One row per group, from its sums.
    fn group_summaries(&self, group_totals: &[Sample], elapsed_s: f64) -> Vec<GroupSummary> {
        self.groups
            .iter()
            .zip(group_totals)
            .map(|(range, g)| {
                let (all, read, write) = op_summaries(g, elapsed_s);
                GroupSummary {
                    name: range.name.clone(),
                    profile: range.profile.clone(),
                    first_worker: range.first,
                    workers: range.workers,
                    rate_per_worker: range.rate_per_worker,
                    all,
                    read,
                    write,
                }
            })
            .collect()
    }

    /// One interval's worker samples merged per host and per group, each worker placed
    /// as `fold` places it (the report's series over time).
    pub fn sums(&self, per_worker: &[Sample], n_streams: usize) -> (Vec<Sample>, Vec<Sample>) {
        let hosts = sum_by_host(per_worker, &self.worker_host, self.hosts.len(), n_streams);
        let mut groups = vec![Sample::new(n_streams); self.groups.len()];
        for (w, s) in per_worker.iter().enumerate() {
            let global = self.worker_base + w as u32;
            for (g, range) in groups.iter_mut().zip(&self.groups) {
                if range.contains(global) {
                    *g += s;
                }
            }
        }
        (hosts, groups)
    }

    /// One interval's brief per host (layout order): of its workers' merged sample, or,
    /// for a host below a relay, the one its relay sent (`relayed`, by host index).
    pub fn host_briefs(
        &self,
        per_worker: &[Sample],
        relayed: &[HostBrief],
        n_streams: usize,
    ) -> Vec<HostBrief> {
        let per_host = sum_by_host(per_worker, &self.worker_host, self.hosts.len(), n_streams);
        briefs_of(&per_host, relayed)
    }

    /// One interval's worker samples merged per host and per group, with each host's
    /// workers and its straggler verdict over that interval alone: the rule `fold` applies
    /// to the whole run (per worker, per group, lost hosts are not peers), without the
    /// start lateness, which is a fact of the whole run. `lost` is indexed like `hosts`
    /// (missing entries: not lost). In a relayed run the groups add what relays merged
    /// (`relayed.groups`), and a host below a relay counts with its brief's I/Os when
    /// its workers are of one group (else it is judged on nothing: no straggler). The
    /// live view's host and group strips.
    pub fn interval_parts(
        &self,
        per_worker: &[Sample],
        relayed: Relayed<'_>,
        n_streams: usize,
        lost: &[bool],
        elapsed_s: f64,
    ) -> IntervalParts {
        let mut sums = Sums {
            fleet: Sample::new(n_streams),
            host_totals: vec![Sample::new(n_streams); self.hosts.len()],
            host_workers: vec![0u32; self.hosts.len()],
            host_group: vec![vec![(0u64, 0u32); self.groups.len()]; self.hosts.len()],
            group_totals: vec![Sample::new(n_streams); self.groups.len()],
        };
        for (w, s) in per_worker.iter().enumerate() {
            let h = self.worker_host.get(w).copied().unwrap_or(usize::MAX);
            self.add_to_sums(&mut sums, self.worker_base + w as u32, h, s);
        }
        for (sum, g) in sums.group_totals.iter_mut().zip(relayed.groups) {
            *sum += g;
        }
        for b in relayed.hosts {
            let Some(hg) = sums.host_group.get_mut(b.host as usize) else {
                continue;
            };
            if hg.iter().filter(|(_, n)| *n > 0).count() == 1 {
                let one = hg.iter_mut().find(|(_, n)| *n > 0).expect("counted");
                one.0 += b.all.ios;
            } else {
                // Its I/Os cannot be split between its groups: no peer, no verdict.
                hg.iter_mut().for_each(|x| *x = (0, 0));
            }
        }
        let briefs = briefs_of(&sums.host_totals, relayed.hosts);
        let lost: Vec<bool> = (0..self.hosts.len())
            .map(|h| lost.get(h).copied().unwrap_or(false))
            .collect();
        let ratios = self.host_ratios(&sums.host_group, &lost, elapsed_s);
        let straggler = (0..self.hosts.len())
            .map(|h| is_straggler(lost[h], self.hosts.len(), None, 0.0, ratios[h], 1.0))
            .collect();
        IntervalParts {
            hosts: sums.host_totals,
            briefs,
            host_workers: sums.host_workers,
            straggler,
            groups: sums.group_totals,
        }
    }

    /// One interval's rows per host and per group (`sums`, then `PartRow::from_sample`),
    /// appended to `hosts` and `groups` (created on first use, in layout order); each
    /// host row carries what the host spent (`rates`, indexed like `hosts`).
    #[allow(clippy::too_many_arguments)]
    pub fn push_part_rows(
        &self,
        index: u32,
        duration_s: f64,
        per_worker: &[Sample],
        rates: &[Option<HostResources>],
        n_streams: usize,
        hosts: &mut Vec<PartIntervals>,
        groups: &mut Vec<PartIntervals>,
    ) {
        let (per_host, per_group) = self.sums(per_worker, n_streams);
        let host_rows = per_host
            .iter()
            .enumerate()
            .map(|(h, s)| {
                let mut row = PartRow::from_sample(index, duration_s, s);
                row.usage = rates.get(h).cloned().flatten();
                row
            })
            .collect();
        let group_rows = per_group
            .iter()
            .map(|s| PartRow::from_sample(index, duration_s, s))
            .collect();
        self.push_rows(host_rows, group_rows, hosts, groups);
    }

    /// Append one interval's rows, per host and per group in layout order, to `hosts`
    /// and `groups` (created on first use, named as the layout names them).
    pub fn push_rows(
        &self,
        host_rows: Vec<PartRow>,
        group_rows: Vec<PartRow>,
        hosts: &mut Vec<PartIntervals>,
        groups: &mut Vec<PartIntervals>,
    ) {
        let named = |names: Vec<String>| {
            names
                .into_iter()
                .map(|name| PartIntervals {
                    name,
                    rows: Vec::new(),
                })
                .collect::<Vec<_>>()
        };
        if hosts.len() != self.hosts.len() {
            *hosts = named(self.hosts.clone());
        }
        if groups.len() != self.groups.len() {
            *groups = named(self.groups.iter().map(|g| g.name.clone()).collect());
        }
        for (part, row) in hosts.iter_mut().zip(host_rows) {
            part.rows.push(row);
        }
        for (part, row) in groups.iter_mut().zip(group_rows) {
            part.rows.push(row);
        }
    }

    /// Each host's delivery against its peers, per worker and per group: a host given
    /// fewer workers is not slower, and a group is judged against its own kind — a
    /// rate-limited group against its scheduled rate, a closed-loop one against the
    /// median host of that group. A host's figure is its worst ratio over the groups it
    /// runs (1 = on par). Lost hosts are not peers (their shortfall is explained), and
    /// nothing measured means nobody is behind.
    fn host_ratios(
        &self,
        host_group: &[Vec<(u64, u32)>],
        lost: &[bool],
        elapsed_s: f64,
    ) -> Vec<f64> {
        if elapsed_s <= 0.0 {
            return vec![1.0; host_group.len()];
        }
        let per_worker = |(ios, n): (u64, u32)| ios as f64 / elapsed_s.max(1e-9) / n.max(1) as f64;
        let references: Vec<Option<f64>> = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, range)| {
                range.rate_per_worker.or_else(|| {
                    let peers: Vec<f64> = host_group
                        .iter()
                        .zip(lost)
                        .filter(|(hg, &lost)| hg[g].1 > 0 && !lost)
                        .map(|(hg, _)| per_worker(hg[g]))
                        .collect();
                    (!peers.is_empty()).then(|| median(&peers))
                })
            })
            .collect();
        host_group
            .iter()
            .map(|hg| {
                hg.iter()
                    .zip(&references)
                    .filter(|(x, r)| x.1 > 0 && r.is_some_and(|r| r > 0.0))
                    .map(|(x, r)| per_worker(*x) / r.expect("filtered"))
                    .fold(1.0, f64::min)
            })
            .collect()
    }
}

/// Per-host sums of per-worker samples: worker w counts for host `worker_host[w]`
/// (workers without one, or beyond `hosts`, count for none). One pass over the workers.
pub fn sum_by_host(
    per_worker: &[Sample],
    worker_host: &[usize],
    hosts: usize,
    n_streams: usize,
) -> Vec<Sample> {
    let mut out = vec![Sample::new(n_streams); hosts];
    for (s, &h) in per_worker.iter().zip(worker_host) {
        if let Some(host) = out.get_mut(h) {
            *host += s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::StreamStats;
    use crate::OpStats;

    fn sample(ios: u64, lat_ns: u64) -> Sample {
        let mut read = OpStats::default();
        for _ in 0..ios {
            read.record(lat_ns, 4096);
        }
        Sample {
            streams: vec![StreamStats {
                read,
                write: OpStats::default(),
            }],
        }
    }

    /// Worker totals without a per-disk breakdown.
    fn whole(totals: &[Sample]) -> Vec<(Sample, Vec<Sample>)> {
        totals.iter().map(|s| (s.clone(), Vec::new())).collect()
    }

    fn layout(rate: Option<f64>) -> Layout {
        Layout {
            streams: vec!["s".into()],
            hosts: vec!["a".into(), "b".into(), "c".into()],
            worker_base: 0,
            worker_host: vec![0, 1, 2, 2],
            groups: vec![GroupRange {
                name: "g".into(),
                profile: "p".into(),
                first: 0,
                workers: 4,
                rate_per_worker: rate,
            }],
        }
    }

    #[test]
    fn fold_sums_workers_into_hosts_groups_and_fleet() {
        let totals = vec![
            sample(100, 1_000),
            sample(100, 2_000),
            sample(100, 3_000),
            sample(100, 4_000),
        ];
        let f = layout(None).fold(totals.into_iter().map(|s| (s, vec![])), &[], 10.0);
        assert_eq!(f.fleet.ios(), 400);
        assert_eq!(f.workers.len(), 4);
        assert_eq!(f.hosts[2].workers, 2);
        assert_eq!(f.hosts[2].all.ios, 200);
        assert_eq!(f.groups[0].all.ios, 400);
        assert_eq!(f.streams[0].read.ios, 400);
        // Percentiles come from the merged histogram: host c saw 3 µs and 4 µs.
        let p50 = f.hosts[2].all.latency_us.as_ref().unwrap().p50;
        assert!((2.9..3.1).contains(&p50), "{p50}");
        // Per worker, every host delivers the same: no straggler.
        assert!(f.hosts.iter().all(|h| !h.straggler));
    }

    #[test]
    fn an_interval_s_parts_follow_the_fold_s_straggler_rule() {
        // Host b's one worker delivers half of its peers' per-worker rate.
        let totals = vec![
            sample(100, 1),
            sample(50, 1),
            sample(100, 1),
            sample(100, 1),
        ];
        let l = layout(None);
        let p = l.interval_parts(&totals, Relayed::default(), 1, &[], 1.0);
        let folded = l.fold(whole(&totals), &[], 1.0);
        let verdicts: Vec<bool> = folded.hosts.iter().map(|h| h.straggler).collect();
        assert_eq!(p.straggler, verdicts);
        assert_eq!(p.straggler, [false, true, false]);
        assert_eq!(p.host_workers, [1, 1, 2]);
        assert_eq!(
            p.hosts.iter().map(Sample::ios).collect::<Vec<_>>(),
            [100, 50, 200]
        );
        assert_eq!(p.groups[0].ios(), 350);
        // A lost host is no peer and no straggler: with b lost, nobody is behind.
        let p = l.interval_parts(&totals, Relayed::default(), 1, &[false, true], 1.0);
        assert_eq!(p.straggler, [false, false, false]);
        // Host a lost: b (50 per worker) is still under 80% of the median of b and c (75).
        let p = l.interval_parts(&totals, Relayed::default(), 1, &[true], 1.0);
        assert_eq!(p.straggler, [false, true, false]);
    }

    /// Hosts b and c below a relay (their workers zero here, their groups' sum and
    /// briefs relayed): the same figures, briefs and verdicts as the flat interval.
    #[test]
    fn an_interval_s_parts_with_relayed_hosts_are_the_flat_ones() {
        let totals = vec![
            sample(100, 1_000),
            sample(50, 2_000),
            sample(100, 3_000),
            sample(100, 4_000),
        ];
        let l = layout(None);
        let flat = l.interval_parts(&totals, Relayed::default(), 1, &[], 1.0);
        let mut below = vec![totals[0].clone()];
        below.resize(4, Sample::new(1));
        let mut group = Sample::new(1);
        totals[1..].iter().for_each(|s| group += s);
        let briefs = [
            HostBrief::of(1, &totals[1], None),
            HostBrief::of(2, &flat.hosts[2], None),
        ];
        let relayed = Relayed {
            groups: std::slice::from_ref(&group),
            hosts: &briefs,
        };
        let tree = l.interval_parts(&below, relayed, 1, &[], 1.0);
        assert_eq!(tree.briefs, flat.briefs);
        assert_eq!(tree.briefs[2].all.ios, 200);
        assert_eq!(tree.straggler, flat.straggler);
        assert_eq!(tree.straggler, [false, true, false]);
        assert_eq!(tree.host_workers, flat.host_workers);
        assert_eq!(tree.groups, flat.groups);
        assert_eq!(
            tree.hosts[2].ios(),
            0,
            "a relayed host's sample is not here"
        );
        assert_eq!(
            l.host_briefs(&below, &briefs, 1),
            flat.briefs,
            "host_briefs gives the same"
        );
    }

    /// A host whose workers are in two groups cannot split its brief between them: it
    /// is judged on nothing (no straggler), and its figures are still its brief's.
    #[test]
    fn a_relayed_host_of_two_groups_is_no_straggler() {
        let mut l = layout(None);
        l.groups = vec![
            GroupRange {
                name: "g".into(),
                profile: "p".into(),
                first: 0,
                workers: 3,
                rate_per_worker: None,
            },
            GroupRange {
                name: "h".into(),
                profile: "p".into(),
                first: 3,
                workers: 1,
                rate_per_worker: Some(1_000.0),
            },
        ];
        let zero = vec![Sample::new(1); 4];
        let slow = HostBrief::of(2, &sample(1, 1_000), None);
        let relayed = Relayed {
            groups: &[],
            hosts: std::slice::from_ref(&slow),
        };
        let p = l.interval_parts(&zero, relayed, 1, &[], 1.0);
        assert!(!p.straggler[2]);
        assert_eq!(p.briefs[2], slow);
    }

    #[test]
    fn disks_are_summarised_under_their_worker_up_to_the_last_busy_one() {
        // Worker 0: disks 0 and 2 busy, 1 idle, 3 idle (trailing: left out); worker 1:
        // no I/O at all (no disks listed).
        let idle = Sample::new(1);
        let disks = vec![sample(10, 1_000), idle.clone(), sample(30, 3_000), idle];
        let mut total = Sample::new(1);
        disks.iter().for_each(|d| total += d);
        let f = layout(None).fold(
            vec![(total, disks), (Sample::new(1), vec![Sample::new(1); 2])],
            &[],
            10.0,
        );
        let d = &f.workers[0].disks;
        assert_eq!(d.iter().map(|x| x.disk).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(d.iter().map(|x| x.all.ios).collect::<Vec<_>>(), [10, 0, 30]);
        assert!(d[1].all.latency_us.is_none());
        assert_eq!(f.workers[0].all.ios, 40);
        let p50 = d[2].read.latency_us.as_ref().unwrap().p50;
        assert!((2.99..3.01).contains(&p50), "{p50}");
        assert!(f.workers[1].disks.is_empty());
    }

    #[test]
    fn straggler_judged_per_worker_and_against_the_scheduled_rate() {
        // Host b's one worker delivers 5 IOPS where its peers deliver 10 per worker.
        let totals = vec![
            sample(100, 1),
            sample(50, 1),
            sample(100, 1),
            sample(100, 1),
        ];
        let f = layout(None).fold(whole(&totals), &[], 10.0);
        let flagged: Vec<bool> = f.hosts.iter().map(|h| h.straggler).collect();
        assert_eq!(flagged, [false, true, false]);
        // Scheduled at 5 IOPS per worker, host b is on its rate: nobody is behind.
        let f = layout(Some(5.0)).fold(whole(&totals), &[], 10.0);
        assert!(f.hosts.iter().all(|h| !h.straggler));
        // A lost host is never a straggler; a late one is.
        let facts = vec![
            HostFacts {
                start_late_ms: Some(0.0),
                ..Default::default()
            },
            HostFacts {
                lost_at_s: Some(3.0),
                ..Default::default()
            },
            HostFacts {
                start_late_ms: Some(250.0),
                ..Default::default()
            },
        ];
        let f = layout(Some(5.0)).fold(whole(&totals), &facts, 10.0);
        let flagged: Vec<bool> = f.hosts.iter().map(|h| h.straggler).collect();
        assert_eq!(flagged, [false, false, true]);
        // Nothing measured (interrupted in warm-up): nobody is behind a schedule.
        let f = layout(Some(5.0)).fold(whole(&totals), &[], 0.0);
        assert!(f.hosts.iter().all(|h| !h.straggler));
        // A lost host is no peer: the median is then a's 10 and b's 5 per worker, and b
        // is behind; counting lost c's 5 would have made b look on par.
        let slow = vec![sample(100, 1), sample(50, 1), sample(50, 1), sample(50, 1)];
        let facts = vec![
            HostFacts::default(),
            HostFacts::default(),
            HostFacts {
                lost_at_s: Some(1.0),
                ..Default::default()
            },
        ];
        let f = layout(None).fold(whole(&slow), &facts, 10.0);
        let flagged: Vec<bool> = f.hosts.iter().map(|h| h.straggler).collect();
        assert_eq!(flagged, [false, true, false]);
    }
}
