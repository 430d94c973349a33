//! The option table: every profile key defined once, with its CLI flag, type, default,
//! range and help text.
//!
//! This table drives three things: validation (numeric ranges are parsed from the
//! `range` column, size and duration limits are the constants below, which a test keeps in
//! step with the column), `--help` text in the binary (`help(key)`), and the generated
//! profile reference `docs/profiles.md` (`reference`, which reads the table). It does not
//! parse TOML or check cross-field rules; `raw` and `validate` do. It depends on nothing
//! but the units, so every module that needs a bound or a help text can read it.

use std::time::Duration;

use crate::units::Bytes;

/// One profile option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDef {
    /// Dotted TOML key: `fleet.qd`, `stream.read_pct`, `name`.
    pub key: &'static str,
    /// Command-line override flag, if there is one.
    pub flag: Option<&'static str>,
    /// Value type as users see it: "integer", "size", "duration", "percent", "float",
    /// "enum: a|b", "block sizes", "hot bands", "disk list", "string".
    pub kind: &'static str,
    /// Default in TOML notation, or None when required / absent by default.
    pub default: Option<&'static str>,
    /// The key must be set in every profile (the flag, when given, sets it too). The
    /// reference says so; `--help` does not, since with a profile the flag is optional.
    pub required: bool,
    /// Allowed values. For integer, percent and float kinds this is machine-read by
    /// validation: `a..=b`, `(a, b]`, `> a` or `>= a`.
    pub range: Option<&'static str>,
    pub help: &'static str,
}

/// Smallest allowed `fleet.disk_size`.
pub const MIN_DISK_SIZE: Bytes = Bytes(Bytes::MIB);
/// `fleet.disk_size` must be a multiple of this (the largest common logical block size).
pub const DISK_SIZE_MULTIPLE: Bytes = Bytes(4096);
/// With direct I/O, block sizes must be multiples of this and alignment at least this.
pub const DIRECT_IO_SECTOR: Bytes = Bytes(512);
/// Bytes per verify unit (`timing.verify`): block sizes and alignment are multiples of it.
pub const VERIFY_UNIT: u64 = 4096;
/// Largest allowed `data.dedupe_unit`.
pub const MAX_DEDUPE_UNIT: Bytes = Bytes(Bytes::MIB);
/// Smallest allowed `timing.interval`.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Most intervals in a run's warm-up and measurement together: the timeline and the
/// per-interval rows are kept for the whole run (a week at 1 s is 604,800).
pub const MAX_INTERVALS: u64 = 1_000_000;
/// Largest allowed block size (`stream.bs`): every I/O in flight holds a buffer of its
/// lane's largest block, and the engines' I/O lengths are 32-bit.
pub const MAX_BLOCK_SIZE: Bytes = Bytes(64 * Bytes::MIB);
/// Most sizes in one `stream.bs` list.
pub const MAX_BLOCK_SIZES: usize = 64;
/// Most bands in one `stream.hot_bands`.
pub const MAX_HOT_BANDS: usize = 100;
/// Most `[[stream]]` tables in a run: one profile's, or every worker group's together
/// (each lane keeps a generator per stream, each disk a histogram per stream).
pub const MAX_STREAMS: usize = 1024;

/// Every key a profile may contain, in the order of the reference.
pub static OPTIONS: &[OptionDef] = &[
    OptionDef {
        key: "name",
        required: false, // the range says "required"
        flag: None,
        kind: "string",
        default: None,
        range: Some("required, non-empty"),
        help: "Profile name, shown in results.",
    },
    OptionDef {
        key: "description",
        required: false,
        flag: None,
        kind: "string",
        default: Some("\"\""),
        range: None,
        help: "What the profile models, where its parameters come from, and what was scaled \
               down. Required for built-in profiles.",
    },
    // [fleet]
    OptionDef {
        key: "fleet.workers",
        required: false,
        flag: Some("--workers"),
        kind: "integer",
        default: Some("1"),
        range: Some("1..=65536"),
        help: "Number of workers (load sources, the analogue of test VMs). The bound holds for \
               the whole fleet too: worker groups together, and an inventory's host pins \
               (workers, iofleet_workers) each and in sum.",
    },
    OptionDef {
        key: "fleet.disks_per_worker",
        required: false,
        flag: Some("--disks"),
        kind: "integer",
        default: Some("1"),
        range: Some("1..=1024"),
        help: "Disks (files or block devices) per worker. With --disks, stream disk lists \
               drop indexes beyond the new count.",
    },
    OptionDef {
        key: "fleet.disk_size",
        required: false,
        flag: Some("--disk-size"),
        kind: "size",
        default: Some("\"1g\""),
        range: Some(">= 1m, multiple of 4k"),
        help: "Addressable bytes per disk.",
    },
    OptionDef {
        key: "fleet.threads_per_disk",
        required: false,
        flag: Some("--threads"),
        kind: "integer",
        default: Some("1"),
        range: Some("1..=256"),
        help: "Threads driving each disk (vdbench threads, DISKSPD -t).",
    },
    OptionDef {
        key: "fleet.qd",
        required: false,
        flag: Some("--qd"),
        kind: "integer",
        default: Some("1"),
        range: Some("1..=4096"),
        help: "Outstanding I/Os per thread shared by the closed-loop streams (DISKSPD -o, \
               Iometer OIO). The --qd flag also replaces every stream's own qd.",
    },
    OptionDef {
        key: "fleet.io_threads",
        required: false,
        flag: Some("--io-threads"),
        kind: "integer",
        default: None,
        range: Some("1..=1024"),
        help: "OS threads that drive the lanes (each thread of a disk is a lane with its own \
               cursor, qd and schedule; many lanes share one I/O thread and its ring). \
               Absent: one per CPU this process may use. Engines with one I/O in flight per \
               thread (psync) run each lane on its own thread instead.",
    },
    OptionDef {
        key: "fleet.cpus",
        required: false,
        flag: Some("--cpus"),
        kind: "CPU list",
        default: None,
        range: Some("e.g. \"0-3,6\"; CPUs this process may use"),
        help: "Pin the I/O threads to these CPUs, in turn. Absent: not pinned.",
    },
    // [timing]
    OptionDef {
        key: "timing.prepare",
        required: false,
        flag: Some("--prepare"),
        kind: "enum: random|zero|none",
        default: Some("\"random\""),
        range: None,
        help: "How disks are filled before the test: with the [data] pattern (random, \
               incompressible unless data sets ratios), zeros, or not at all (reads of \
               never-written blocks may not touch media).",
    },
    OptionDef {
        key: "timing.verify",
        required: false,
        flag: Some("--verify"),
        kind: "bool",
        default: Some("false"),
        range: None,
        help: "Verify data end to end: every written 4 KiB unit carries a header (disk, offset, \
               sequence, time) and an XXH3-64 checksum, every read checks it, and a journal per disk lets \
               `iofleet verify` check the disks later. Needs a block size and alignment that are \
               multiples of 4k and an engine that touches storage (see docs/verify.md).",
    },
    OptionDef {
        key: "timing.warmup",
        required: false,
        flag: Some("--warmup"),
        kind: "duration",
        default: Some("\"0s\""),
        range: Some(">= 0"),
        help: "Warm-up time: measured but excluded from the summary.",
    },
    OptionDef {
        key: "timing.duration",
        required: false,
        flag: Some("--duration"),
        kind: "duration",
        default: Some("\"60s\""),
        range: Some("> 0"),
        help: "Measured time after the warm-up.",
    },
    OptionDef {
        key: "timing.interval",
        required: false,
        flag: Some("--interval"),
        kind: "duration",
        default: Some("\"1s\""),
        range: Some(
            ">= 100ms, <= timing.duration; at most 1000000 intervals in warm-up and duration together",
        ),
        help: "Reporting period; results are kept per interval.",
    },
    OptionDef {
        key: "timing.rate_iops",
        required: false,
        flag: Some("--rate"),
        kind: "float",
        default: None,
        range: Some("> 0"),
        help: "Rate cap in IOPS per worker for the closed-loop streams (those without their \
               own rate_iops). Absent: as fast as possible.",
    },
    OptionDef {
        key: "timing.arrival",
        required: false,
        flag: None,
        kind: "enum: poisson|uniform",
        default: Some("\"poisson\""),
        range: None,
        help: "Spacing of issue times when a rate is set: exponential (Poisson process) or \
               even.",
    },
    // [data]
    OptionDef {
        key: "data.pattern",
        required: false,
        flag: Some("--pattern"),
        kind: "enum: random|zero",
        default: Some("\"random\""),
        range: None,
        help: "Data every write carries, and a random prepare fills with: pseudo-random (every \
               unit distinct and incompressible unless the ratios below say otherwise) or \
               zeros. See docs/data.md.",
    },
    OptionDef {
        key: "data.dedupe_ratio",
        required: false,
        flag: Some("--dedupe-ratio"),
        kind: "float",
        default: Some("1.0"),
        range: Some(">= 1"),
        help: "Written units per distinct unit (N:1, vdbench's dedupratio): 3.0 writes each \
               distinct dedupe_unit three times. 1.0: every unit distinct.",
    },
    OptionDef {
        key: "data.dedupe_unit",
        required: false,
        flag: Some("--dedupe-unit"),
        kind: "size",
        default: Some("\"4k\""),
        range: Some("multiple of 512, <= 1m"),
        help: "Unit of dedupe and compression (vdbench's dedupunit): the block size at which \
               the storage under test dedupes.",
    },
    OptionDef {
        key: "data.compress_ratio",
        required: false,
        flag: Some("--compress-ratio"),
        kind: "float",
        default: Some("1.0"),
        range: Some(">= 1"),
        help: "Bytes of each unit per byte it compresses to (C:1, vdbench's compratio): 2.0 \
               makes each unit half pseudo-random, half zeros. 1.0: incompressible.",
    },
    OptionDef {
        key: "data.write_through",
        required: false,
        flag: Some("--write-through"),
        kind: "bool",
        default: Some("false"),
        range: None,
        help: "Write through the device's volatile cache: disks are opened with O_DSYNC, so \
               each write completes once it is durable (the block layer sends it with FUA, or \
               a flush after it), as DISKSPD's -Sw/-Sh (docs/diskspd.md) and fio's sync=dsync. Reads are \
               unchanged.",
    },
    // [[stream]]
    OptionDef {
        key: "stream.name",
        required: false,
        flag: None,
        kind: "string",
        default: Some("\"stream<N>\""),
        range: Some("unique within the profile"),
        help: "Stream name, shown in per-stream results. N is the stream's index from 0.",
    },
    OptionDef {
        key: "stream.bs",
        required: true,
        flag: Some("--bs"),
        kind: "block sizes",
        default: None,
        range: Some(
            "each > 0, <= 64m and <= fleet.disk_size; multiple of 512 with direct I/O; at \
             most 64 sizes in a list, weights 1..=1000000",
        ),
        help: "Block size, fixed (\"8k\") or a weighted list of size:weight \
               (\"512:10,4k:60,64k:30\").",
    },
    OptionDef {
        key: "stream.read_pct",
        required: true,
        flag: Some("--read-pct"),
        kind: "percent",
        default: None,
        range: Some("0..=100"),
        help: "Percent of I/Os that are reads; the rest are writes. Each I/O's direction is drawn on its own (no runs of one direction).",
    },
    OptionDef {
        key: "stream.random_pct",
        required: true,
        flag: Some("--random-pct"),
        kind: "percent",
        default: None,
        range: Some("0..=100"),
        help: "Percent of I/Os at a random offset; the rest continue the thread's sequential \
               cursor.",
    },
    OptionDef {
        key: "stream.align",
        required: false,
        flag: None,
        kind: "size",
        default: Some("smallest bs rounded up to a power of two, at least 512"),
        range: Some("power of two, <= fleet.disk_size; >= 512 with direct I/O"),
        help: "Alignment of random offsets.",
    },
    OptionDef {
        key: "stream.weight",
        required: false,
        flag: None,
        kind: "integer",
        default: Some("1"),
        range: Some("1..=1000000"),
        help: "Relative share of I/Os among the closed-loop streams on the same disk. Not \
               with rate_iops.",
    },
    OptionDef {
        key: "stream.rate_iops",
        required: false,
        flag: None,
        kind: "float",
        default: None,
        range: Some("> 0"),
        help: "Own rate in IOPS per worker: the stream gets its own open-loop lane on each \
               thread. Not with weight.",
    },
    OptionDef {
        key: "stream.qd",
        required: false,
        flag: Some("--qd"),
        kind: "integer",
        default: Some("fleet.qd"),
        range: Some("1..=4096"),
        help: "Outstanding I/Os per thread of this stream's own lane; only with rate_iops.",
    },
    OptionDef {
        key: "stream.hot_bands",
        required: false,
        flag: None,
        kind: "hot bands",
        default: None,
        range: Some("at most 100 bands; each > 0; io% sum <= 100; range% sum <= 100"),
        help: "Locality as io%/range% bands from the start of the working set, e.g. \
               \"95/5:4/10\". Not with zipf.",
    },
    OptionDef {
        key: "stream.zipf",
        required: false,
        flag: None,
        kind: "float",
        default: None,
        range: Some("> 0"),
        help: "Locality as a Zipf distribution over blocks with this exponent (theta); block \
               0 hottest. Not with hot_bands.",
    },
    OptionDef {
        key: "stream.working_set_pct",
        required: false,
        flag: Some("--working-set"),
        kind: "percent",
        default: Some("100"),
        range: Some("(0, 100]"),
        help: "Percent of each disk addressed, from its start; must hold one block of the \
               largest bs.",
    },
    OptionDef {
        key: "stream.disks",
        required: false,
        flag: None,
        kind: "disk list",
        default: Some("\"all\""),
        range: Some("indexes < fleet.disks_per_worker"),
        help: "Disks of each worker this stream drives: \"all\", [0, 1], \"0-3\" or \"4,5\".",
    },
];

/// The definition of `key` (e.g. `"fleet.qd"`, `"stream.bs"`).
///
/// # Panics
/// On a key that is not in [`OPTIONS`]: that is a programming error.
pub fn option(key: &str) -> &'static OptionDef {
    OPTIONS
        .iter()
        .find(|o| o.key == key)
        .unwrap_or_else(|| panic!("no profile option named '{key}'"))
}

/// The whole numbers integer option `key` allows, from its `range` column: the one
/// bound of that quantity, used by every reader of it (flags, profiles, fio's
/// `numjobs`, an inventory's worker pins).
///
/// # Panics
/// On a key that is not an integer option with an inclusive `a..=b` range: that is a
/// programming error.
pub fn int_range(key: &str) -> std::ops::RangeInclusive<u64> {
    let o = option(key);
    match (o.kind, o.bounds()) {
        (
            "integer",
            Some(Bounds {
                lo: Some((lo, true)),
                hi: Some((hi, true)),
            }),
        ) => lo as u64..=hi as u64,
        _ => panic!("profile option '{key}' has no whole-number range a..=b"),
    }
}

/// Help text of `key`, for clap's `help = ...`.
pub fn help(key: &str) -> &'static str {
    option(key).help
}

/// The option a CLI flag overrides (for `--qd`, the fleet key).
pub fn by_flag(flag: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.flag == Some(flag))
}

/// A numeric interval read from an option's `range` column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// (value, inclusive)
    pub lo: Option<(f64, bool)>,
    pub hi: Option<(f64, bool)>,
}

impl Bounds {
    pub fn contains(&self, v: f64) -> bool {
        if !v.is_finite() {
            return false;
        }
        let lo_ok = match self.lo {
            Some((lo, true)) => v >= lo,
            Some((lo, false)) => v > lo,
            None => true,
        };
        let hi_ok = match self.hi {
            Some((hi, true)) => v <= hi,
            Some((hi, false)) => v < hi,
            None => true,
        };
        lo_ok && hi_ok
    }

    /// Which bound `v` breaks, in words: "must be at least 1", "must be greater than 0".
    fn broken_by(&self, v: f64) -> String {
        if !v.is_finite() {
            return "must be a finite number".into();
        }
        match (self.lo, self.hi) {
            (Some((lo, true)), _) if v < lo => format!("must be at least {lo}"),
            (Some((lo, false)), _) if v <= lo => format!("must be greater than {lo}"),
            (_, Some((hi, true))) if v > hi => format!("must be at most {hi}"),
            (_, Some((hi, false))) => format!("must be less than {hi}"),
            _ => "is out of range".into(),
        }
    }
}

impl OptionDef {
    /// Numeric bounds for integer, percent and float options, parsed from `range`.
    pub fn bounds(&self) -> Option<Bounds> {
        if !matches!(self.kind, "integer" | "percent" | "float") {
            return None;
        }
        parse_bounds(self.range?)
    }

    /// The reference's description: the help, and "Required." for required keys.
    pub fn description(&self) -> String {
        if self.required {
            format!("{} Required.", self.help)
        } else {
            self.help.to_string()
        }
    }

    /// Check a number against this option's range, saying which bound it breaks:
    /// `Err("150 is out of range 0..=100: must be at most 100")`.
    pub fn check(&self, v: f64) -> Result<(), String> {
        match self.bounds() {
            Some(b) if !b.contains(v) => Err(format!(
                "{v} is out of range {}: {}",
                self.range.unwrap_or_default(),
                b.broken_by(v)
            )),
            _ => Ok(()),
        }
    }
}

/// `a..=b`, `(a, b]`, `[a, b)`, `> a`, `>= a`, `< a`, `<= a`.
fn parse_bounds(text: &str) -> Option<Bounds> {
    let t = text.trim();
    let num = |s: &str| s.trim().parse::<f64>().ok();
    if let Some((a, b)) = t.split_once("..=") {
        return Some(Bounds {
            lo: Some((num(a)?, true)),
            hi: Some((num(b)?, true)),
        });
    }
    if (t.starts_with('(') || t.starts_with('[')) && (t.ends_with(')') || t.ends_with(']')) {
        let (a, b) = t[1..t.len() - 1].split_once(',')?;
        return Some(Bounds {
            lo: Some((num(a)?, t.starts_with('['))),
            hi: Some((num(b)?, t.ends_with(']'))),
        });
    }
    for (op, lower, inclusive) in [
        (">=", true, true),
        ("<=", false, true),
        (">", true, false),
        ("<", false, false),
    ] {
        if let Some(rest) = t.strip_prefix(op) {
            let bound = Some((num(rest)?, inclusive));
            return Some(if lower {
                Bounds {
                    lo: bound,
                    hi: None,
                }
            } else {
                Bounds {
                    lo: None,
                    hi: bound,
                }
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{format_duration, parse_bytes, parse_duration};

    /// Dotted keys of every leaf in a serialised raw profile (`[[stream]]` as `stream`).
    fn leaf_keys(
        prefix: &str,
        v: &serde_json::Value,
        out: &mut std::collections::BTreeSet<String>,
    ) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    leaf_keys(&key, v, out);
                }
            }
            serde_json::Value::Array(a) if a.first().is_some_and(|x| x.is_object()) => {
                leaf_keys(prefix, &a[0], out)
            }
            _ => {
                out.insert(prefix.to_string());
            }
        }
    }

    #[test]
    fn the_option_table_and_the_toml_fields_agree() {
        // Every field a profile file can hold, from the raw structs themselves (the
        // serde view, with its renames): adding a field without its option, or an
        // option without its field, fails here.
        let raw = crate::raw::RawProfile {
            data: crate::raw::RawData {
                pattern: Some("random".into()),
                ..Default::default()
            },
            streams: vec![crate::raw::RawStream::default()],
            ..Default::default()
        };
        let mut fields = std::collections::BTreeSet::new();
        leaf_keys("", &serde_json::to_value(&raw).unwrap(), &mut fields);
        let keys: std::collections::BTreeSet<String> =
            OPTIONS.iter().map(|o| o.key.to_string()).collect();
        assert_eq!(
            fields.difference(&keys).collect::<Vec<_>>(),
            Vec::<&String>::new(),
            "TOML fields without an option"
        );
        assert_eq!(
            keys.difference(&fields).collect::<Vec<_>>(),
            Vec::<&String>::new(),
            "options without a TOML field"
        );
    }

    #[test]
    fn keys_are_unique_and_help_is_set() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(!o.help.is_empty(), "{} has no help", o.key);
            assert!(
                OPTIONS[..i].iter().all(|p| p.key != o.key),
                "{} twice",
                o.key
            );
        }
        assert_eq!(option("fleet.qd").flag, Some("--qd"));
        assert_eq!(by_flag("--read-pct").unwrap().key, "stream.read_pct");
        assert_eq!(by_flag("--qd").unwrap().key, "fleet.qd");
    }

    #[test]
    #[should_panic(expected = "no profile option named 'fleet.nope'")]
    fn unknown_option_panics() {
        option("fleet.nope");
    }

    #[test]
    fn every_numeric_range_parses() {
        for o in OPTIONS {
            if matches!(o.kind, "integer" | "percent" | "float") && o.range.is_some() {
                assert!(o.bounds().is_some(), "range of {} does not parse", o.key);
            }
        }
        let pct = option("stream.read_pct");
        assert!(pct.check(0.0).is_ok() && pct.check(100.0).is_ok());
        assert_eq!(
            pct.check(150.0).unwrap_err(),
            "150 is out of range 0..=100: must be at most 100"
        );
        let qd = option("fleet.qd");
        assert_eq!(
            qd.check(-1.0).unwrap_err(),
            "-1 is out of range 1..=4096: must be at least 1"
        );
        assert!(option("timing.rate_iops")
            .check(0.0)
            .unwrap_err()
            .ends_with("must be greater than 0"));
        let ws = option("stream.working_set_pct");
        assert!(ws.check(0.0).is_err() && ws.check(0.1).is_ok() && ws.check(100.0).is_ok());
        assert!(ws.check(120.0).is_err());
        let rate = option("stream.rate_iops");
        assert!(rate.check(0.0).is_err() && rate.check(0.5).is_ok());
        assert!(rate.check(f64::NAN).is_err());
    }

    #[test]
    fn size_and_duration_ranges_match_the_constants() {
        let ds = option("fleet.disk_size").range.unwrap();
        assert!(ds.contains(&format!(">= {MIN_DISK_SIZE}")), "{ds}");
        assert!(
            ds.contains(&format!("multiple of {DISK_SIZE_MULTIPLE}")),
            "{ds}"
        );
        assert_eq!(parse_bytes("1m").unwrap(), MIN_DISK_SIZE);
        let iv = option("timing.interval").range.unwrap();
        assert!(
            iv.contains(&format!(">= {}", format_duration(MIN_INTERVAL))),
            "{iv}"
        );
        assert_eq!(parse_duration("100ms").unwrap(), MIN_INTERVAL);
        assert!(
            iv.contains(&format!("at most {MAX_INTERVALS} intervals")),
            "{iv}"
        );
        for key in ["stream.bs", "stream.align"] {
            let r = option(key).range.unwrap();
            assert!(r.contains(&DIRECT_IO_SECTOR.0.to_string()), "{key}: {r}");
        }
        let bs = option("stream.bs").range.unwrap();
        assert!(bs.contains(&format!("<= {MAX_BLOCK_SIZE}")), "{bs}");
        assert!(
            bs.contains(&format!("at most {MAX_BLOCK_SIZES} sizes")),
            "{bs}"
        );
        let w = int_range("stream.weight");
        assert!(
            bs.contains(&format!("weights {}..={}", w.start(), w.end())),
            "{bs}"
        );
        let hb = option("stream.hot_bands").range.unwrap();
        assert!(
            hb.contains(&format!("at most {MAX_HOT_BANDS} bands")),
            "{hb}"
        );
    }

    #[test]
    fn integer_ranges_are_read_from_the_table() {
        assert_eq!(int_range("fleet.workers"), 1..=65536);
        assert_eq!(int_range("fleet.disks_per_worker"), 1..=1024);
        assert_eq!(int_range("fleet.qd"), 1..=4096);
    }

    #[test]
    #[should_panic(expected = "has no whole-number range")]
    fn a_size_has_no_integer_range() {
        int_range("fleet.disk_size");
    }
}
