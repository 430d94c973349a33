//! Property tests of the profile crate's two parsers of user text: profile TOML and fio
//! job files. Each parser gets two properties: text assembled from its own grammar's
//! pieces (right and wrong keys, values of every type, stray lines) never panics and is
//! either refused naming the key or line that fixes it or resolved within the option
//! table's bounds; and a profile or job file generated from structured values, rendered
//! as text, resolves to the plan those values describe. The fuzz targets in `fuzz/` go
//! further in time (bench/README.md); these run in the suite with a modest case count.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use iofleet_profile::fio::{self, FioError};
use iofleet_profile::options::option;
use iofleet_profile::{
    parse_toml, resolve, Bytes, Context, Locality, Overrides, Plan, ProfileError,
};
use proptest::prelude::*;
use proptest::sample::select;

const CASES: u32 = 96;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const DIRECT: Context = Context { direct: true };

/// A plan's integers and numbers are within the option table's ranges.
fn assert_within_bounds(plan: &Plan) {
    let check = |key: &str, v: f64| {
        if let Err(m) = option(key).check(v) {
            panic!("{key} = {v}: {m}");
        }
    };
    let f = &plan.fleet;
    check("fleet.workers", f.workers.into());
    check("fleet.disks_per_worker", f.disks_per_worker.into());
    check("fleet.threads_per_disk", f.threads_per_disk.into());
    check("fleet.qd", f.qd.into());
    for s in &plan.streams {
        check("stream.read_pct", s.read_pct);
        check("stream.random_pct", s.random_pct);
        check("stream.working_set_pct", s.working_set_pct);
        assert!(s.disks.iter().all(|&d| d < f.disks_per_worker), "{s:?}");
        assert!(s.bs.max() <= f.disk_size, "{s:?}");
    }
}

/// A profile error names its key (or, for TOML syntax, a line) and no flag.
fn assert_names_key(e: &ProfileError) {
    let msg = e.to_string();
    match e {
        ProfileError::Parse { key: None, .. } => assert!(msg.contains("line "), "{msg}"),
        ProfileError::Read { .. } | ProfileError::UnknownProfile { .. } => {
            panic!("not a parse or value error: {msg}")
        }
        _ => {
            let key = e.key().unwrap_or_else(|| panic!("no key: {msg}"));
            assert!(!key.is_empty() && msg.contains(key), "{msg}");
            assert_eq!(e.flag(), None, "{msg}");
        }
    }
}

// ---- profile TOML ---------------------------------------------------------------------

/// `key = value` lines of a table: each key present with probability `p`, its value
/// one of the key's valid ones nine times in ten, else one of its wrong ones.
fn table(keys: &'static [Key], p: f64) -> impl Strategy<Value = String> {
    keys.iter()
        .map(|&(k, good, bad)| {
            let value = match (good.is_empty(), bad.is_empty()) {
                (_, true) => select(good).boxed(),
                (true, false) => select(bad).boxed(),
                (false, false) => prop_oneof![9 => select(good), 1 => select(bad)].boxed(),
            };
            proptest::option::weighted(p, value.prop_map(move |v| format!("{k} = {v}\n")))
        })
        .collect::<Vec<_>>()
        .prop_map(|lines| lines.into_iter().flatten().collect())
}

/// A key, values it takes and values it refuses.
type Key = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

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

/// Sizes a stream may use, each a multiple of the direct-I/O sector.
const SIZES: [u64; 6] = [512, 4096, 8192, 65536, 131072, 1 << 20];

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

// ---- fio job files --------------------------------------------------------------------

/// Environment of the job files here: `${SIZE}` is set, every other variable is not.
fn env(v: &str) -> Option<String> {
    (v == "SIZE").then(|| "64m".to_string())
}

/// A fio error is located at a line of the text it names.
fn assert_located(e: &FioError, texts: &BTreeMap<&str, &str>) {
    let msg = e.to_string();
    let in_range = |file: &str, line: usize| {
        let text = texts
            .get(file)
            .unwrap_or_else(|| panic!("{file} is not a given text: {msg}"));
        assert!(
            (1..=text.lines().count()).contains(&line),
            "{file}:{line}: {msg}"
        );
    };
    match e {
        FioError::Syntax { at, .. } => {
            assert!(msg.starts_with(&format!("{at}: ")), "{msg}");
            in_range(&at.file, at.line);
        }
        FioError::Unsupported(problems) => {
            for p in problems {
                assert!(msg.contains(&format!("{}: {}: ", p.at, p.option)), "{msg}");
                in_range(&p.at.file, p.at.line);
            }
        }
        FioError::Read { .. } => panic!("a file was read: {msg}"),
        _ => {}
    }
}

const FIO: &[Key] = &[
    (
        "rw",
        &["read", "write", "randread", "randwrite", "rw", "randrw"],
        &["trim", "read:8", ""],
    ),
    (
        "bs",
        &["4k", "512", "64k", "4k,64k"],
        &["0", "3x", "4k,8k,1k"],
    ),
    (
        "bssplit",
        &["4k/60:64k/40", "8k/100"],
        &["4k/60:64k/60", "4k"],
    ),
    ("bsrange", &["4k-64k"], &["64k-4k"]),
    ("iodepth", &["1", "16", "4096"], &["0", "4097", "x"]),
    ("numjobs", &["1", "4"], &["0", "65537", "-1"]),
    (
        "size",
        &["16m", "1g", "50%", "${SIZE}"],
        &["0", "100k", "101%", "${NOPE}"],
    ),
    ("runtime", &["1", "10s", "2m"], &["0", "x"]),
    ("ramp_time", &["0", "1"], &["x"]),
    ("time_based", &["1"], &[]),
    ("rwmixread", &["0", "70", "100"], &["101", "x"]),
    ("percentage_random", &["50", "80,20"], &["101"]),
    (
        "random_distribution",
        &["zipf:1.2", "zoned:60/10:40/90", "random"],
        &["pareto:0.5", "zipf:0", "zoned:60/10:60/10"],
    ),
    ("rate_iops", &["100", "1000"], &["0", "100,200"]),
    ("rate", &["10m"], &["10m,5m", "0"]),
    ("rate_process", &["linear", "poisson"], &["x"]),
    ("nrfiles", &["1", "4"], &["0"]),
    ("filename", &["a:b", "data"], &[]),
    ("direct", &["0", "1"], &[]),
    (
        "ioengine",
        &["io_uring", "libaio", "psync", "null"],
        &["mmap"],
    ),
    ("stonewall", &["1"], &[]),
    ("kb_base", &["1000", "1024"], &["7"]),
    ("verify", &["0", "md5", "crc32c"], &["x"]),
];

/// A job file: a [global] and one to three jobs of options mostly right, now and then
/// an include (of the input's own file, or of a host file) or a line that is not fio's.
fn fio_text() -> impl Strategy<Value = String> {
    let extra = || {
        proptest::option::weighted(
            0.1,
            select(vec![
                "include inc.fio\n",
                "include /etc/passwd\n",
                "bad line\n",
                "fsync=4\n",
                "colour=1\n",
                "[a\n",
                "=4k\n",
            ]),
        )
        .prop_map(Option::unwrap_or_default)
    };
    (
        table(FIO, 0.15),
        proptest::collection::vec((table(FIO, 0.25), extra()), 1..=3),
        extra(),
    )
        .prop_map(|(global, jobs, first)| {
            let mut t = format!("{first}[global]\n{global}");
            for (i, (job, extra)) in jobs.iter().enumerate() {
                t.push_str(&format!("[j{i}]\n{job}{extra}"));
            }
            t
        })
}

proptest! {
    #![proptest_config(config())]

    /// A job file (and a file it may include) of right and wrong options: refused at a
    /// line, or mapped into plans within the bounds; never a panic, never a host file.
    #[test]
    fn job_text_is_refused_at_a_line_or_mapped_within_bounds(
        main in fio_text(),
        inc in table(FIO, 0.2),
    ) {
        let inc = format!("[global]\n{inc}");
        let texts = BTreeMap::from([("job.fio", main.as_str()), ("inc.fio", inc.as_str())]);
        let files = BTreeMap::from([(PathBuf::from("inc.fio"), inc.clone())]);
        let imported = fio::parse_job_text_in(&main, "job.fio", &files, &env)
            .and_then(|jobs| fio::import(&jobs, true, &[]));
        match imported {
            Err(e) => assert_located(&e, &texts),
            Ok(imp) => {
                for g in &imp.groups {
                    match resolve(&g.raw, &Overrides::default(), &DIRECT) {
                        Ok(plan) => assert_within_bounds(&plan),
                        Err(e) => assert_names_key(&e),
                    }
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
struct GenJob {
    rw: &'static str,
    bs: u64,
    iodepth: u32,
    numjobs: u32,
    size_mib: u64,
    runtime_s: u64,
    rwmixread: u32,
}

fn gen_job() -> impl Strategy<Value = GenJob> {
    (
        select(vec![
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "randrw",
        ]),
        select(SIZES.to_vec()),
        1u32..=256,
        1u32..=64,
        1u64..=1024,
        1u64..=600,
        0u32..=100,
    )
        .prop_map(
            |(rw, bs, iodepth, numjobs, size_mib, runtime_s, rwmixread)| GenJob {
                rw,
                bs,
                iodepth,
                numjobs,
                size_mib,
                runtime_s,
                rwmixread,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    /// Generated jobs, written as a job file with a shared [global], map to worker groups
    /// whose plans are the jobs' numjobs, iodepth, size, runtime, mix and block size.
    #[test]
    fn a_generated_job_file_maps_to_the_plans_it_describes(
        jobs in proptest::collection::vec(gen_job(), 1..=3),
    ) {
        let mut text = "[global]\ntime_based\ndirect=1\n".to_string();
        for (i, j) in jobs.iter().enumerate() {
            text.push_str(&format!(
                "[job{i}]\nrw={}\nbs={}\niodepth={}\nnumjobs={}\nsize={}m\nruntime={}\n",
                j.rw, j.bs, j.iodepth, j.numjobs, j.size_mib, j.runtime_s
            ));
            if j.rw.ends_with("rw") {
                text.push_str(&format!("rwmixread={}\n", j.rwmixread));
            }
        }
        let parsed = fio::parse_job_text_in(&text, "gen.fio", &BTreeMap::new(), &env)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let imp = fio::import(&parsed, true, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        prop_assert_eq!(imp.groups.len(), jobs.len());
        for (g, j) in imp.groups.iter().zip(&jobs) {
            let plan = resolve(&g.raw, &Overrides::default(), &DIRECT)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let f = &plan.fleet;
            prop_assert_eq!((f.workers, f.qd, f.disks_per_worker), (j.numjobs, j.iodepth, 1));
            prop_assert_eq!(f.disk_size, Bytes(j.size_mib << 20));
            prop_assert_eq!(plan.timing.duration, Duration::from_secs(j.runtime_s));
            let read_pct = match j.rw {
                "read" | "randread" => 100.0,
                "write" | "randwrite" => 0.0,
                _ => f64::from(j.rwmixread),
            };
            let random_pct = if j.rw.starts_with("rand") { 100.0 } else { 0.0 };
            // Reads and writes share block size and randomness: one stream of the mix.
            prop_assert_eq!(plan.streams.len(), 1);
            let s = &plan.streams[0];
            prop_assert_eq!((s.read_pct, s.random_pct), (read_pct, random_pct));
            prop_assert_eq!(&s.bs.entries, &vec![(Bytes(j.bs), 1)]);
            assert_within_bounds(&plan);
        }
    }
}

/// Includes among texts in memory: a relative path from the including file's directory,
/// and a file that exists on every host is no such file, never read.
#[test]
fn includes_from_memory_never_read_the_hosts_files() {
    let files = BTreeMap::from([(
        PathBuf::from("sub/common.fio"),
        "[global]\nbs=${SIZE}\n".to_string(),
    )]);
    let jobs =
        fio::parse_job_text_in("include sub/common.fio\n[a]\n", "t.fio", &files, &env).unwrap();
    let bs = jobs[0].get(&["bs"]).unwrap();
    assert_eq!(bs.value.as_deref(), Some("64m"));
    assert_eq!(bs.at.to_string(), "sub/common.fio:2");
    let e = fio::parse_job_text_in("include /etc/passwd\n[a]\n", "t.fio", &files, &env)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "t.fio:1: include /etc/passwd: no such file (/etc/passwd)"
    );
}
