//! Property tests of the profile crate's parser of user text, profile TOML (the fio job
//! files it models are `iofleet-import`'s, tested the same way in its own
//! `tests/properties.rs`). Two properties: text assembled from the grammar's pieces (right
//! and wrong keys, values of every type, stray lines) never panics and is either refused
//! naming the key or line that fixes it or resolved within the option table's bounds; and
//! a profile generated from structured values, rendered as text, resolves to the plan
//! those values describe. The fuzz targets in `fuzz/` go further in time
//! (bench/README.md); these run in the suite with a modest case count.

use std::time::Duration;

use iofleet_profile::{parse_toml, resolve, Bytes, Locality, Overrides};
use proptest::prelude::*;
use proptest::sample::select;

#[path = "../../../tests-support/profile_props.rs"]
mod props;
use props::{assert_names_key, assert_within_bounds, config, table, Key, DIRECT, SIZES};

const FLEET: &[Key] = &[
    (
        "workers",
        &["1", "4", "65536"],
        &["0", "65537", "-3", "\"4\"", "1.5"],
    ),
    ("disks_per_worker", &["1", "8", "1024"], &["0", "1025"]),
    (
        "disk_size",
        &["\"1g\"", "\"64m\"", "1048576"],
        &["\"512k\"", "\"-5g\"", "\"4097k\"", "\"1x\""],
    ),
    ("threads_per_disk", &["1", "4", "256"], &["0", "257"]),
    ("qd", &["1", "32", "4096"], &["0", "4097"]),
    ("io_threads", &["1", "1024"], &["0"]),
    (
        "cpus",
        &["\"0-1\"", "\"0,2\""],
        &["\"3-1\"", "\"0-99999\"", "\"x\""],
    ),
];
const TIMING: &[Key] = &[
    (
        "prepare",
        &["\"random\"", "\"zero\"", "\"none\""],
        &["\"full\""],
    ),
    (
        "warmup",
        &["\"0s\"", "\"5s\"", "10"],
        &["\"-1s\"", "\"1x\""],
    ),
    (
        "duration",
        &["\"60s\"", "\"1s\"", "3600", "\"1h\""],
        &["\"0s\"", "\"10ms\""],
    ),
    (
        "interval",
        &["\"1s\"", "\"100ms\""],
        &["\"50ms\"", "\"2h\""],
    ),
    ("rate_iops", &["100", "0.5"], &["0", "-1", "nan", "inf"]),
    ("arrival", &["\"poisson\"", "\"uniform\""], &["\"burst\""]),
    ("verify", &["true", "false"], &["1"]),
];
const DATA: &[Key] = &[
    ("pattern", &["\"random\"", "\"zero\""], &["\"ones\""]),
    ("dedupe_ratio", &["1.0", "2.5"], &["0.5", "nan"]),
    ("dedupe_unit", &["\"4k\"", "\"1m\""], &["\"2m\"", "\"100\""]),
    ("compress_ratio", &["1.0", "3.0"], &["0.9"]),
];
/// A stream's mix, present in most streams.
const STREAM_MIX: &[Key] = &[
    (
        "bs",
        &["\"4k\"", "\"512\"", "\"64k:1,4k:3\""],
        &["\"4k:0\"", "\"0\"", "\"2g\"", "\"4k,\"", "\"100\""],
    ),
    ("read_pct", &["0", "70", "100"], &["100.5", "-1", "nan"]),
    ("random_pct", &["0", "50", "100"], &["101"]),
];
const STREAM: &[Key] = &[
    ("name", &["\"a\"", "\"b\""], &["\"\""]),
    ("align", &["\"4k\"", "\"512\""], &["\"3k\"", "\"1g\""]),
    ("weight", &["1", "10"], &["0"]),
    ("rate_iops", &["100", "0.5"], &["0", "nan"]),
    ("qd", &["1", "8"], &["4097"]),
    (
        "hot_bands",
        &["\"95/5:4/10\"", "\"50/50\""],
        &["\"60/100\"", "\"x\""],
    ),
    ("zipf", &["1.2"], &["0", "-1"]),
    ("working_set_pct", &["100", "10"], &["0.0001", "0", "101"]),
    (
        "disks",
        &["\"all\"", "\"0\"", "[0]"],
        &["[5]", "\"3-1\"", "[-1]", "\"0-99\""],
    ),
];

/// A profile: each table's keys mostly right, now and then a wrong value, an unknown
/// key or a line that is not TOML.
fn profile_text() -> impl Strategy<Value = String> {
    let stream = (table(STREAM_MIX, 0.95), table(STREAM, 0.2))
        .prop_map(|(mix, rest)| format!("[[stream]]\n{mix}{rest}"));
    (
        proptest::bool::weighted(0.95),
        table(FLEET, 0.3),
        table(TIMING, 0.3),
        table(DATA, 0.2),
        proptest::collection::vec(stream, 1..=3),
        proptest::option::weighted(
            0.1,
            select(vec![
                "= 1\n",
                "[flet]\n",
                "[fleet\n",
                "name = \"x\"\n",
                "colour = 1\n",
            ]),
        ),
    )
        .prop_map(|(named, fleet, timing, data, streams, junk)| {
            format!(
                "{}[fleet]\n{fleet}[timing]\n{timing}[data]\n{data}{}{}",
                if named { "name = \"p\"\n" } else { "" },
                streams.concat(),
                junk.unwrap_or_default()
            )
        })
}

proptest! {
    #![proptest_config(config())]

    /// A profile of right and wrong values: refused naming the key (or a line), or
    /// resolved within the bounds; never a panic.
    #[test]
    fn profile_text_is_refused_by_key_or_resolved_within_bounds(text in profile_text()) {
        match parse_toml(&text, "p.toml") {
            Err(e) => assert_names_key(&e),
            Ok(raw) => match resolve(&raw, &Overrides::default(), &DIRECT) {
                Ok(plan) => assert_within_bounds(&plan),
                Err(e) => assert_names_key(&e),
            },
        }
    }
}

#[derive(Debug, Clone)]
enum Lane {
    Weight(u32),
    Rate(u32, u32),
}

#[derive(Debug, Clone)]
struct GenStream {
    /// (bytes, weight); a single entry is written as a fixed size.
    bs: Vec<(u64, u32)>,
    /// Half-percent steps, exact in binary and in text.
    read_half_pct: u32,
    random_half_pct: u32,
    lane: Lane,
    disks: Vec<u32>,
    working_set_pct: u32,
    zipf: Option<u32>,
}

#[derive(Debug, Clone)]
struct GenProfile {
    workers: u32,
    disks: u32,
    disk_mib: u64,
    threads: u32,
    qd: u32,
    warmup_s: u64,
    duration_s: u64,
    interval_ms: u64,
    streams: Vec<GenStream>,
}

fn gen_stream(disks: u32) -> impl Strategy<Value = GenStream> {
    (
        proptest::sample::subsequence(SIZES.to_vec(), 1..=3),
        proptest::collection::vec(1u32..=100, 3),
        0u32..=200,
        0u32..=200,
        prop_oneof![
            (1u32..=1000).prop_map(Lane::Weight),
            (1u32..=100_000, 1u32..=64).prop_map(|(r, q)| Lane::Rate(r, q)),
        ],
        proptest::collection::btree_set(0..disks, 1..=disks as usize),
        2u32..=100,
        proptest::option::of(1u32..=30),
    )
        .prop_map(
            |(sizes, weights, read, random, lane, disks, ws, zipf)| GenStream {
                bs: sizes.into_iter().zip(weights).collect(),
                read_half_pct: read,
                random_half_pct: random,
                lane,
                disks: disks.into_iter().collect(),
                working_set_pct: ws,
                zipf,
            },
        )
}

fn gen_profile() -> impl Strategy<Value = GenProfile> {
    (1u32..=16)
        .prop_flat_map(|disks| {
            (
                1u32..=65536,
                Just(disks),
                64u64..=4096,
                1u32..=256,
                1u32..=4096,
                0u64..=600,
                1u64..=3600,
                100u64..=10_000,
                proptest::collection::vec(gen_stream(disks), 1..=4),
            )
        })
        .prop_map(
            |(
                workers,
                disks,
                disk_mib,
                threads,
                qd,
                warmup_s,
                duration_s,
                interval_ms,
                streams,
            )| {
                GenProfile {
                    workers,
                    disks,
                    disk_mib,
                    threads,
                    qd,
                    warmup_s,
                    duration_s,
                    interval_ms: interval_ms.min(duration_s * 1000),
                    streams,
                }
            },
        )
}

/// The profile as a user would write it, by hand rather than through the serializer.
fn render_profile(p: &GenProfile) -> String {
    let mut t = format!(
        "name = \"generated\"\n[fleet]\nworkers = {}\ndisks_per_worker = {}\ndisk_size = \"{}m\"\n\
         threads_per_disk = {}\nqd = {}\n[timing]\nwarmup = \"{}s\"\nduration = {}\n\
         interval = \"{}ms\"\n",
        p.workers, p.disks, p.disk_mib, p.threads, p.qd, p.warmup_s, p.duration_s, p.interval_ms
    );
    for (i, s) in p.streams.iter().enumerate() {
        let bs = match s.bs.as_slice() {
            [(b, _)] => Bytes(*b).to_string(),
            many => many
                .iter()
                .map(|(b, w)| format!("{}:{w}", Bytes(*b)))
                .collect::<Vec<_>>()
                .join(","),
        };
        t.push_str(&format!(
            "[[stream]]\nname = \"s{i}\"\nbs = \"{bs}\"\nread_pct = {}\nrandom_pct = {}\n\
             working_set_pct = {}\ndisks = {:?}\n",
            f64::from(s.read_half_pct) / 2.0,
            f64::from(s.random_half_pct) / 2.0,
            s.working_set_pct,
            s.disks
        ));
        match s.lane {
            Lane::Weight(w) => t.push_str(&format!("weight = {w}\n")),
            Lane::Rate(r, q) => t.push_str(&format!("rate_iops = {r}\nqd = {q}\n")),
        }
        if let Some(z) = s.zipf {
            t.push_str(&format!("zipf = {}\n", f64::from(z) / 10.0));
        }
    }
    t
}

proptest! {
    #![proptest_config(config())]

    /// A generated profile, written as TOML, resolves to the plan it describes.
    #[test]
    fn a_generated_profile_resolves_to_the_plan_it_describes(p in gen_profile()) {
        let text = render_profile(&p);
        let raw = parse_toml(&text, "gen.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let plan = resolve(&raw, &Overrides::default(), &DIRECT)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let f = &plan.fleet;
        prop_assert_eq!(
            (f.workers, f.disks_per_worker, f.threads_per_disk, f.qd),
            (p.workers, p.disks, p.threads, p.qd)
        );
        prop_assert_eq!(f.disk_size, Bytes(p.disk_mib << 20));
        prop_assert_eq!(plan.timing.warmup, Duration::from_secs(p.warmup_s));
        prop_assert_eq!(plan.timing.duration, Duration::from_secs(p.duration_s));
        prop_assert_eq!(plan.timing.interval, Duration::from_millis(p.interval_ms));
        prop_assert_eq!(plan.streams.len(), p.streams.len());
        for (i, (s, g)) in plan.streams.iter().zip(&p.streams).enumerate() {
            prop_assert_eq!(&s.name, &format!("s{i}"));
            let want: Vec<(Bytes, u32)> = match g.bs.as_slice() {
                [(b, _)] => vec![(Bytes(*b), 1)],
                many => many.iter().map(|&(b, w)| (Bytes(b), w)).collect(),
            };
            prop_assert_eq!(&s.bs.entries, &want);
            prop_assert_eq!(s.read_pct, f64::from(g.read_half_pct) / 2.0);
            prop_assert_eq!(s.random_pct, f64::from(g.random_half_pct) / 2.0);
            prop_assert_eq!(s.working_set_pct, f64::from(g.working_set_pct));
            prop_assert_eq!(&s.disks, &g.disks);
            // Aligned to the smallest block, at least a sector, a power of two.
            let smallest = g.bs.iter().map(|b| b.0).min().unwrap();
            prop_assert_eq!(s.align, Bytes(smallest.max(512).next_power_of_two()));
            match g.lane {
                Lane::Weight(w) => prop_assert_eq!((s.weight, s.rate_iops, s.qd), (Some(w), None, None)),
                Lane::Rate(r, q) => prop_assert_eq!(
                    (s.weight, s.rate_iops, s.qd),
                    (None, Some(f64::from(r)), Some(q))
                ),
            }
            let locality = match g.zipf {
                Some(z) => Locality::Zipf { theta: f64::from(z) / 10.0 },
                None => Locality::Uniform,
            };
            prop_assert_eq!(&s.locality, &locality);
        }
        assert_within_bounds(&plan);
    }
}
