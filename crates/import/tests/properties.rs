//! Property tests of the fio job-file reader, as the profile crate's of profile TOML
//! (shared helpers in tests-support/profile_props.rs). Text assembled from the grammar's
//! pieces (right and wrong options, includes, stray lines) never panics, never reads a
//! host's file, and is either refused at a line of the text it names or mapped into
//! profiles that are refused naming their key or resolve within the option table's
//! bounds; and a job file generated from structured values maps to the plans those
//! values describe. The `fio_job` fuzz target goes further in time (bench/README.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use iofleet_import::fio::{self, FioError};
use iofleet_profile::{resolve, Bytes, Overrides};
use proptest::prelude::*;
use proptest::sample::select;

#[path = "../../../tests-support/profile_props.rs"]
mod props;
use props::{assert_names_key, assert_within_bounds, config, table, Key, DIRECT, SIZES};

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
    (
        "iodepth",
        &["1", "16 ; inline comment", "4096", "(4*4)"],
        &["0", "4097", "x", "(1+)"],
    ),
    ("numjobs", &["1", "4", "$ncpus"], &["0", "65537", "-1"]),
    ("blockalign", &["4k", "8k,8k"], &["0", "4k,8k"]),
    ("write_bw_log", &["bw"], &[]),
    ("gtod_reduce", &["1"], &[]),
    ("io_submit_mode", &["offload"], &[]),
    (
        "size",
        &[
            "16m",
            "1g",
            "50%",
            "${SIZE}",
            "$pagesize*4096",
            "16m # comment",
        ],
        &["0", "100k", "101%", "${NOPE}"],
    ),
    ("runtime", &["1", "10s", "2m"], &["0", "x"]),
    ("ramp_time", &["0", "1"], &["x"]),
    ("time_based", &["1"], &[]),
    ("rwmixread", &["0", "70", "100"], &["101", "x"]),
    ("percentage_random", &["50", "80,20"], &["101"]),
    (
        "random_distribution",
        &[
            "zipf:1.2",
            "zoned:60/10:40/90",
            "random",
            "zoned:50/5:30/15:20/",
        ],
        &[
            "pareto:0.5",
            "zipf:0",
            "zoned:60/10:60/10",
            "zoned_abs:60/1g",
            "zoned:60/100:40/",
        ],
    ),
    ("rate_iops", &["100", "1000"], &["0", "100,200"]),
    ("rate", &["10m"], &["10m,5m", "0"]),
    ("rate_process", &["linear", "poisson"], &["x"]),
    ("nrfiles", &["1", "4"], &["0"]),
    ("filename", &["a:b", "data"], &[]),
    ("direct", &["0", "1"], &[]),
    (
        "ioengine",
        &["io_uring", "libaio", "psync", "null", "windowsaio"],
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
