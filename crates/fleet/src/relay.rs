//! What a relay sends up for its subtree (`--relay-fanout`, docs/fleet.md "Relays"): its
//! children's interval frames merged into one, and their measured totals once, at the
//! end. The merge is the collector's own `+=`, so a tree of relays gives the controller
//! exactly the figures a flat fleet gives it:
//!
//! - per worker group, one merged sample per interval (histograms `+=`, counters
//!   summed): the fleet's and the groups' interval rows, and their totals, are the flat
//!   merge's, bucket for bucket;
//! - per host below the relay, a brief of its interval (`HostBrief`: counters, latency
//!   sum and the quantiles the interval rows show, taken from that host's own merged
//!   histogram, so exact too) and what the host spent;
//! - at the end, each (worker, disk) total over the measured intervals, with its
//!   histograms: every worker's, disk's and host's total row as the flat merge's.
//!
//! What a relay does not send up is each (worker, disk) sample of each interval: that
//! is what grows with the fleet, and what the controller no longer holds.
//! This module only merges and encodes; the relay's session drives it.

use std::collections::BTreeMap;
use std::io;

use iofleet_stats::fold::GroupRange;
use iofleet_stats::{GenSample, HostUsage, PackedSample, Sample};

/// A host's brief lives in the statistics crate, so the results store keeps it as the
/// type it is.
pub use iofleet_stats::brief::{HostBrief, OpsBrief};

/// One interval of a relay's subtree, merged: one frame up instead of one per host.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayedInterval {
    pub index: u32,
    /// The latest stop inside the interval any host below reported (ns since the
    /// epoch), and whether some host ran through it: the collector cuts the interval as
    /// it would with every host's report.
    pub stopped_at: Option<u64>,
    pub ran_through: bool,
    /// Per worker group (index into the run's groups), the merged sample of every
    /// worker below that belongs to it; groups without a worker below are absent.
    pub groups: Vec<(u32, Sample)>,
    /// Per host below that reported the interval, its brief.
    pub hosts: Vec<HostBrief>,
    /// The generator self-check, folded over every host below.
    pub generator: Option<Box<GenSample>>,
}

/// A host's (global worker, disk, sample)s of one interval, as an interval frame
/// carries them.
pub type DiskSamples = Vec<(u32, u32, Sample)>;

/// One host's report of an interval, as a relay takes it in.
pub struct ChildInterval<'a> {
    /// The host, as the controller numbers them.
    pub host: u32,
    /// (global worker, disk, sample), as in an interval frame.
    pub samples: &'a [(u32, u32, Sample)],
    pub stopped_at: Option<u64>,
    pub usage: Option<&'a HostUsage>,
}

/// Merge the reports of interval `index` of every host below a relay that reported it:
/// per group `+=` (a worker in no group counts in none, as in the flat fold), per host
/// its brief, and the stop rule's facts. The generator figures are the caller's to set
/// (the relay's collector folded them already).
pub fn merge_interval<'a>(
    index: u32,
    children: impl IntoIterator<Item = ChildInterval<'a>>,
    groups: &[GroupRange],
    streams: usize,
) -> RelayedInterval {
    let mut merged: BTreeMap<u32, Sample> = BTreeMap::new();
    let mut out = RelayedInterval {
        index,
        stopped_at: None,
        ran_through: false,
        groups: Vec::new(),
        hosts: Vec::new(),
        generator: None,
    };
    for c in children {
        let mut host = Sample::new(streams);
        for (worker, _disk, s) in c.samples {
            host += s;
            if let Some(g) = groups.iter().position(|g| g.contains(*worker)) {
                *merged
                    .entry(g as u32)
                    .or_insert_with(|| Sample::new(streams)) += s;
            }
        }
        out.hosts
            .push(HostBrief::of(c.host, &host, c.usage.cloned()));
        match c.stopped_at {
            Some(t) => out.stopped_at = Some(out.stopped_at.map_or(t, |m| m.max(t))),
            None => out.ran_through = true,
        }
    }
    out.groups = merged.into_iter().collect();
    out
}

/// Each (worker, disk) total over the measured intervals of the hosts below a relay,
/// kept packed as the collector keeps its own; sent up once, at the end.
#[derive(Debug, Clone, Default)]
pub struct SubtreeTotals {
    /// Intervals before this one are warm-up; at and past `intervals`, beyond the
    /// timeline (the collector ignores them; so do these totals).
    pub warmup_intervals: u32,
    pub intervals: u32,
    pub streams: usize,
    totals: BTreeMap<(u32, u32), PackedSample>,
}

impl SubtreeTotals {
    pub fn new(warmup_intervals: u32, intervals: u32, streams: usize) -> Self {
        SubtreeTotals {
            warmup_intervals,
            intervals,
            streams,
            totals: BTreeMap::new(),
        }
    }

    /// Add a host's report of interval `index`, when it is measured.
    pub fn add(&mut self, index: u32, samples: &[(u32, u32, Sample)]) {
        if index < self.warmup_intervals || index >= self.intervals {
            return;
        }
        for (w, d, s) in samples {
            self.totals
                .entry((*w, *d))
                .or_insert_with(|| PackedSample::new(self.streams))
                .add(s);
        }
    }

    /// Every (worker, disk) total, in (worker, disk) order.
    pub fn samples(&self) -> Vec<(u32, u32, Sample)> {
        self.totals
            .iter()
            .map(|(&(w, d), p)| (w, d, p.to_sample()))
            .collect()
    }
}

/// What a relay sends up while its subtree runs, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Upward {
    /// A host below was lost (`host` as the controller numbers them) at `at_ns` since
    /// the epoch; sent before the first interval that counts it lost.
    HostLost {
        host: u32,
        at_ns: u64,
        reason: String,
    },
    Interval(Box<RelayedInterval>),
}

/// The relay's observer: its own collector (the one `collect`, over the hosts below
/// it) decides when an interval is complete, who is lost and where a stop cuts; this
/// turns each complete interval into one `Upward::Interval`, each newly lost host into
/// an `Upward::HostLost` before it, and keeps the measured totals for the end.
pub struct Forwarder<F: FnMut(Upward)> {
    /// The controller's number of each host of the relay's collector (its `hosts`).
    pub hosts: Vec<u32>,
    /// The run's groups, as the controller has them (global worker numbers).
    pub groups: Vec<GroupRange>,
    pub totals: SubtreeTotals,
    lost_sent: Vec<bool>,
    up: F,
}

impl<F: FnMut(Upward)> Forwarder<F> {
    pub fn new(hosts: Vec<u32>, groups: Vec<GroupRange>, totals: SubtreeTotals, up: F) -> Self {
        let n = hosts.len();
        Forwarder {
            hosts,
            groups,
            totals,
            lost_sent: vec![false; n],
            up,
        }
    }
}

impl<F: FnMut(Upward)> crate::observer::Observer for Forwarder<F> {
    fn interval(&mut self, snap: &crate::observer::IntervalSnapshot<'_>) {
        let k = snap.row.index;
        for (h, lost) in snap.host_lost_s.iter().enumerate() {
            let (Some(t), Some(&host)) = (lost, self.hosts.get(h)) else {
                continue;
            };
            if !std::mem::replace(&mut self.lost_sent[h], true) {
                (self.up)(Upward::HostLost {
                    host,
                    at_ns: (t * 1e9).round() as u64,
                    reason: format!("{} lost (below a relay)", snap.hosts[h]),
                });
            }
        }
        // Each host's (global worker, disk, sample)s, as its agent reported them.
        let mut per_host: Vec<Vec<(u32, u32, Sample)>> = vec![Vec::new(); self.hosts.len()];
        for (w, disks) in snap.disks.iter().enumerate() {
            let Some(h) = snap.worker_host.get(w).filter(|&&h| h < per_host.len()) else {
                continue;
            };
            let worker = snap.layout.worker_base + w as u32;
            for (d, s) in disks.iter().enumerate() {
                per_host[*h].push((worker, d as u32, s.clone()));
            }
        }
        for samples in &per_host {
            self.totals.add(k, samples);
        }
        let streams = self.totals.streams;
        let children = per_host
            .iter()
            .enumerate()
            .filter(|(h, s)| !s.is_empty() || snap.usage.get(*h).is_some_and(Option::is_some))
            .map(|(h, samples)| ChildInterval {
                host: self.hosts[h],
                samples,
                stopped_at: None,
                usage: snap.usage.get(h).and_then(Option::as_ref),
            });
        let mut merged = merge_interval(k, children, &self.groups, streams);
        // The collector's own stop facts: what every report below said, folded.
        merged.stopped_at = snap.stopped_at;
        merged.ran_through = snap.ran_through;
        merged.generator = snap.generator.cloned().map(Box::new);
        (self.up)(Upward::Interval(Box::new(merged)));
    }
}

/// A relayed interval's wire form (the `Relayed` frame): index, stop, the groups'
/// samples (`Sample::encode`), and the hosts' briefs and generator figures as
/// length-prefixed JSON (small next to the samples).
pub fn encode(r: &RelayedInterval, b: &mut Vec<u8>) {
    b.extend_from_slice(&r.index.to_le_bytes());
    b.extend_from_slice(&r.stopped_at.unwrap_or(u64::MAX).to_le_bytes());
    b.push(r.ran_through as u8);
    b.extend_from_slice(&(r.groups.len() as u32).to_le_bytes());
    for (g, s) in &r.groups {
        b.extend_from_slice(&g.to_le_bytes());
        s.encode(b);
    }
    let json = serde_json::to_vec(&(&r.hosts, &r.generator)).expect("briefs serialise");
    b.extend_from_slice(&(json.len() as u32).to_le_bytes());
    b.extend_from_slice(&json);
}

/// The inverse of `encode`; a body that is short, long or garbled is an error naming
/// what is wrong, never a panic.
pub fn decode(body: &[u8]) -> io::Result<RelayedInterval> {
    fn bad(m: String) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, m)
    }
    fn take<'a>(i: &mut &'a [u8], n: usize) -> io::Result<&'a [u8]> {
        if i.len() < n {
            return Err(bad("truncated relayed frame".into()));
        }
        let (a, b) = i.split_at(n);
        *i = b;
        Ok(a)
    }
    let u32_ = |i: &mut &[u8]| -> io::Result<u32> {
        Ok(u32::from_le_bytes(take(i, 4)?.try_into().expect("4 bytes")))
    };
    let mut i = body;
    let index = u32_(&mut i)?;
    let stop = u64::from_le_bytes(take(&mut i, 8)?.try_into().expect("8 bytes"));
    let ran_through = match take(&mut i, 1)?[0] {
        0 => false,
        1 => true,
        b => return Err(bad(format!("a relayed frame's ran-through flag is {b}"))),
    };
    let n = u32_(&mut i)? as usize;
    // Room for what the body can hold (a group takes at least 8 bytes), not the count
    // it claims.
    let mut groups = Vec::with_capacity(n.min(i.len() / 8));
    for _ in 0..n {
        let g = u32_(&mut i)?;
        groups.push((g, Sample::decode(&mut i).map_err(bad)?));
    }
    let n = u32_(&mut i)? as usize;
    let (hosts, generator): (Vec<HostBrief>, Option<Box<GenSample>>) =
        serde_json::from_slice(take(&mut i, n)?)
            .map_err(|e| bad(format!("a relayed frame's host briefs: {e}")))?;
    if !i.is_empty() {
        return Err(bad(format!(
            "a relayed frame with {} bytes past its end",
            i.len()
        )));
    }
    Ok(RelayedInterval {
        index,
        stopped_at: (stop != u64::MAX).then_some(stop),
        ran_through,
        groups,
        hosts,
        generator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_stats::result::PartRow;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const STREAMS: usize = 2;

    /// A host's report of one interval: the host and its (worker, disk, sample)s.
    type Report = (u32, Vec<(u32, u32, Sample)>);

    /// A sample of `n` random I/Os over both streams and directions, latencies spread
    /// over five decades so the histograms hold many buckets.
    fn sample(rng: &mut SmallRng, n: u32) -> Sample {
        let mut s = Sample::new(STREAMS);
        for _ in 0..n {
            let st = &mut s.streams[rng.random_range(0..STREAMS)];
            let o = if rng.random_bool(0.3) {
                &mut st.write
            } else {
                &mut st.read
            };
            let lat = 10f64.powf(rng.random_range(3.0..8.0)) as u64;
            o.ios += 1;
            o.bytes += 4096;
            o.latency_sum_ns += lat as u128;
            o.latency_sq_sum_ns2 += (lat as u128) * (lat as u128);
            o.hist.record(lat);
        }
        s
    }

    fn groups() -> Vec<GroupRange> {
        let g = |name: &str, first, workers| GroupRange {
            name: name.into(),
            profile: "p".into(),
            first,
            workers,
            rate_per_worker: None,
        };
        vec![g("a", 0, 5), g("b", 5, 7)]
    }

    /// Twelve workers of two disks each on four hosts (three workers per host, so host
    /// 1 holds workers of both groups).
    fn reports(rng: &mut SmallRng) -> Vec<Report> {
        let mut out = Vec::new();
        for h in 0..4u32 {
            let mut samples = Vec::new();
            for w in h * 3..h * 3 + 3 {
                for d in 0..2u32 {
                    let n = rng.random_range(0..400);
                    samples.push((w, d, sample(rng, n)));
                }
            }
            out.push((h, samples));
        }
        out
    }

    fn children(r: &[Report]) -> Vec<ChildInterval<'_>> {
        r.iter()
            .map(|(h, s)| ChildInterval {
                host: *h,
                samples: s,
                stopped_at: None,
                usage: None,
            })
            .collect()
    }

    #[test]
    fn merged_groups_and_host_briefs_equal_the_flat_merge() {
        let mut rng = SmallRng::seed_from_u64(7);
        let r = reports(&mut rng);
        let merged = merge_interval(3, children(&r), &groups(), STREAMS);
        // Flat: every (worker, disk) sample added to its group's and its host's.
        let mut flat_groups = vec![Sample::new(STREAMS); 2];
        for (_, samples) in &r {
            for (w, _, s) in samples {
                let g = groups().iter().position(|g| g.contains(*w)).unwrap();
                flat_groups[g] += s;
            }
        }
        assert_eq!(merged.groups.len(), 2);
        for (g, s) in &merged.groups {
            assert_eq!(s, &flat_groups[*g as usize], "group {g}");
            assert!(s.ios() > 0);
        }
        for ((h, samples), brief) in r.iter().zip(&merged.hosts) {
            assert_eq!(brief.host, *h);
            let mut host = Sample::new(STREAMS);
            samples.iter().for_each(|(_, _, s)| host += s);
            // The row the controller makes of the brief is the flat one, figure for
            // figure, at any interval length.
            for duration_s in [1.0, 0.37] {
                let flat = PartRow::from_sample(3, duration_s, &host);
                assert_eq!(brief.all.interval_ops(duration_s), flat.all);
                assert_eq!(brief.read.interval_ops(duration_s), flat.read);
                assert_eq!(brief.write.interval_ops(duration_s), flat.write);
            }
        }
        // A host with no I/O has no latencies, as a flat row.
        let none = HostBrief::of(9, &Sample::new(STREAMS), None);
        assert_eq!(
            none.all.interval_ops(1.0),
            PartRow::from_sample(0, 1.0, &Sample::new(STREAMS)).all
        );
    }

    #[test]
    fn a_tree_of_merges_equals_one_merge() {
        // Merging two relays' merges (a relay of relays) gives the one merge's groups.
        let mut rng = SmallRng::seed_from_u64(11);
        let r = reports(&mut rng);
        let one = merge_interval(0, children(&r), &groups(), STREAMS);
        let left = merge_interval(0, children(&r[..2]), &groups(), STREAMS);
        let right = merge_interval(0, children(&r[2..]), &groups(), STREAMS);
        let mut tree = vec![Sample::new(STREAMS); 2];
        for (g, s) in left.groups.iter().chain(&right.groups) {
            tree[*g as usize] += s;
        }
        for (g, s) in &one.groups {
            assert_eq!(&tree[*g as usize], s);
        }
    }

    #[test]
    fn the_stop_rule_sees_the_latest_cut_and_any_host_that_ran_through() {
        let mut rng = SmallRng::seed_from_u64(3);
        let r = reports(&mut rng);
        let mut c = children(&r);
        c[0].stopped_at = Some(50);
        c[2].stopped_at = Some(70);
        let m = merge_interval(1, c, &groups(), STREAMS);
        assert_eq!(m.stopped_at, Some(70));
        assert!(m.ran_through, "hosts 1 and 3 ran through");
        let mut c = children(&r);
        c.iter_mut().for_each(|c| c.stopped_at = Some(60));
        let m = merge_interval(1, c, &groups(), STREAMS);
        assert_eq!((m.stopped_at, m.ran_through), (Some(60), false));
    }

    #[test]
    fn totals_keep_only_measured_intervals_on_the_timeline() {
        let mut rng = SmallRng::seed_from_u64(5);
        let mut t = SubtreeTotals::new(2, 5, STREAMS);
        let mut want: BTreeMap<(u32, u32), Sample> = BTreeMap::new();
        for index in 0..7 {
            let r = reports(&mut rng);
            for (_, samples) in &r {
                t.add(index, samples);
                if (2..5).contains(&index) {
                    for (w, d, s) in samples {
                        *want.entry((*w, *d)).or_insert_with(|| Sample::new(STREAMS)) += s;
                    }
                }
            }
        }
        let got = t.samples();
        assert_eq!(got.len(), want.len());
        for ((w, d, s), ((ww, wd), ws)) in got.iter().zip(&want) {
            assert_eq!((w, d), (ww, wd));
            assert_eq!(s.read(), ws.read());
            assert_eq!(s.write(), ws.write());
        }
    }

    #[test]
    fn the_wire_form_round_trips_and_refuses_what_is_garbled() {
        let mut rng = SmallRng::seed_from_u64(9);
        let r = reports(&mut rng);
        let mut c = children(&r);
        c[3].stopped_at = Some(12345);
        let mut m = merge_interval(4, c, &groups(), STREAMS);
        m.generator = Some(Box::new(GenSample {
            threads: 3,
            ..Default::default()
        }));
        let mut b = Vec::new();
        encode(&m, &mut b);
        assert_eq!(decode(&b).unwrap(), m);
        let err = |b: &[u8]| decode(b).unwrap_err().to_string();
        assert!(
            err(&b[..b.len() - 1]).contains("truncated"),
            "{}",
            err(&b[..b.len() - 1])
        );
        let mut long = b.clone();
        long.push(0);
        assert!(err(&long).contains("1 bytes past its end"));
        let mut flag = b.clone();
        flag[12] = 7;
        assert!(err(&flag).contains("ran-through flag is 7"));
        // A group count far beyond the body is refused without allocating for it.
        let mut count = b.clone();
        count[13..17].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&count).is_err());
        assert!(err(&[1, 2]).contains("truncated"));
    }
}
