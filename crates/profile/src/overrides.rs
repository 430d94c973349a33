//! Command-line overrides of profile keys: one field per flag of the option table, parsed
//! by clap into typed units (sizes, durations, block-size lists), so a malformed value is
//! a clap error naming the flag, exit code 2, before anything runs.
//!
//! The struct is flattened into every command that takes a workload (`iofleet run`,
//! `verify`, `sweep`, `find-max`); each flag's help is its option's help from the table,
//! so an option is described once. Adding a profile key with a flag touches the option
//! table (`options`), its raw and resolved fields (`raw`, `plan`), its resolution
//! (`validate`, with the field here) and its printed form (`emit`), all in this crate;
//! the tests below and in `options` fail when the table, the TOML fields and the flags
//! disagree.

use std::time::Duration;

use clap::Args;

use crate::options::help;
use crate::plan::{BlockSizes, DataPattern, Prepare};
use crate::units::{parse_bytes, parse_duration, Bytes};
use crate::values::parse_block_sizes;

/// Command-line overrides; `None` keeps the profile's value. Integers are `i64` as typed,
/// so a negative one reaches the option's range check and its message. Stream-level
/// fields (`bs`, `read_pct`, `random_pct`, `working_set`) apply to every stream; `qd`
/// replaces `fleet.qd` and every rated stream's own `qd`.
//
// Numeric flags take negative numbers (`allow_negative_numbers`; sizes and durations,
// which are not plain numbers, `allow_hyphen_values`), so `--qd -1` reaches the option's
// own range check instead of clap's "unexpected argument".
#[derive(Args, Default, Debug, Clone, PartialEq)]
pub struct Overrides {
    #[arg(long, allow_negative_numbers = true, help = help("fleet.workers"))]
    pub workers: Option<i64>,
    #[arg(long, allow_negative_numbers = true, help = help("fleet.disks_per_worker"))]
    pub disks: Option<i64>,
    #[arg(long, allow_hyphen_values = true, value_parser = size, help = help("fleet.disk_size"))]
    pub disk_size: Option<Bytes>,
    #[arg(long, allow_negative_numbers = true, help = help("fleet.threads_per_disk"))]
    pub threads: Option<i64>,
    #[arg(long, allow_negative_numbers = true, help = help("fleet.qd"))]
    pub qd: Option<i64>,
    #[arg(long, value_name = "N", allow_negative_numbers = true, help = help("fleet.io_threads"))]
    pub io_threads: Option<i64>,
    /// `--cpus`, as typed.
    #[arg(long, value_name = "LIST", help = help("fleet.cpus"))]
    pub cpus: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_parser = parse_block_sizes, help = help("stream.bs"))]
    pub bs: Option<BlockSizes>,
    #[arg(long, allow_negative_numbers = true, help = help("stream.read_pct"))]
    pub read_pct: Option<f64>,
    #[arg(long, allow_negative_numbers = true, help = help("stream.random_pct"))]
    pub random_pct: Option<f64>,
    #[arg(long, allow_negative_numbers = true, help = help("stream.working_set_pct"))]
    pub working_set: Option<f64>,
    #[arg(long, allow_hyphen_values = true, value_parser = duration, help = help("timing.duration"))]
    pub duration: Option<Duration>,
    #[arg(long, allow_hyphen_values = true, value_parser = duration, help = help("timing.warmup"))]
    pub warmup: Option<Duration>,
    #[arg(long, allow_hyphen_values = true, value_parser = duration, help = help("timing.interval"))]
    pub interval: Option<Duration>,
    #[arg(long, allow_negative_numbers = true, help = help("timing.rate_iops"))]
    pub rate: Option<f64>,
    #[arg(long, value_enum, help = help("timing.prepare"))]
    pub prepare: Option<Prepare>,
    /// `--verify` only ever turns verification on.
    #[arg(long, help = help("timing.verify"))]
    pub verify: bool,
    #[arg(long, value_enum, help = help("data.pattern"))]
    pub pattern: Option<DataPattern>,
    #[arg(long, value_name = "N", allow_negative_numbers = true, help = help("data.dedupe_ratio"))]
    pub dedupe_ratio: Option<f64>,
    #[arg(long, allow_hyphen_values = true, value_parser = size, help = help("data.dedupe_unit"))]
    pub dedupe_unit: Option<Bytes>,
    #[arg(long, value_name = "C", allow_negative_numbers = true, help = help("data.compress_ratio"))]
    pub compress_ratio: Option<f64>,
    /// `--write-through` only ever turns write-through on.
    #[arg(long, help = help("data.write_through"))]
    pub write_through: bool,
}

impl Overrides {
    /// No override given.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }
}

/// A size flag's value (`4k`, `1g`); a negative one is refused as negative.
pub fn size(s: &str) -> Result<Bytes, String> {
    parse_bytes(s)
}

/// A duration flag's value (`90s`, `500ms`); a negative one is refused as negative.
pub fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::OPTIONS;
    use clap::{Command, ValueEnum};

    fn command() -> Command {
        Overrides::augment_args(Command::new("overrides"))
    }

    fn help_of(a: &clap::Arg) -> String {
        a.get_help().map(|h| h.to_string()).unwrap_or_default()
    }

    /// Every option with a flag has that flag here, carrying the help of one of the keys
    /// it sets; every flag here is some option's flag. A key added to the table with a
    /// flag but not here (or the reverse) fails.
    #[test]
    fn the_flags_and_the_option_table_agree() {
        let cmd = command();
        for o in OPTIONS {
            let Some(flag) = o.flag else { continue };
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long().map(|l| format!("--{l}")).as_deref() == Some(flag))
                .unwrap_or_else(|| panic!("{}: no {flag} among the overrides", o.key));
            // A flag may set several keys (`--qd`: fleet.qd and every stream's qd).
            let help = help_of(arg);
            assert!(
                OPTIONS
                    .iter()
                    .any(|p| p.flag == Some(flag) && p.help == help),
                "{flag} carries the help of none of its keys ({})",
                o.key
            );
        }
        for a in cmd.get_arguments() {
            let long = a.get_long().map(|l| format!("--{l}"));
            assert!(
                OPTIONS.iter().any(|o| o.flag == long.as_deref()),
                "{long:?} is no option's flag"
            );
        }
    }

    fn names<T: ValueEnum>() -> Vec<String> {
        T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect()
    }

    /// An enum option's values in the table are its flag's values.
    #[test]
    fn enum_flags_take_the_tables_values() {
        for (key, got) in [
            ("timing.prepare", names::<Prepare>()),
            ("data.pattern", names::<DataPattern>()),
        ] {
            let kind = crate::options::option(key).kind;
            let want: Vec<String> = kind
                .strip_prefix("enum: ")
                .unwrap_or_else(|| panic!("{key}: {kind}"))
                .split('|')
                .map(str::to_string)
                .collect();
            assert_eq!(got, want, "{key}");
        }
    }

    #[test]
    fn flags_parse_into_typed_overrides() {
        let m = command()
            .try_get_matches_from([
                "x",
                "--qd",
                "-1",
                "--disk-size",
                "2g",
                "--warmup",
                "5s",
                "--bs",
                "4k:60,64k:40",
                "--prepare",
                "zero",
                "--verify",
            ])
            .unwrap();
        let ov = <Overrides as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
        assert_eq!(ov.qd, Some(-1));
        assert_eq!(ov.disk_size, Some(Bytes(2 * Bytes::GIB)));
        assert_eq!(ov.warmup, Some(Duration::from_secs(5)));
        assert_eq!(ov.bs.as_ref().map(|b| b.entries.len()), Some(2));
        assert_eq!(ov.prepare, Some(Prepare::Zero));
        assert!(ov.verify);
        assert!(!ov.is_empty());
        for (flag, value, says) in [
            ("--disk-size", "-1g", "'-1g' is negative"),
            ("--warmup", "-5s", "'-5s' is negative"),
            ("--bs", "-4k", "'-4k' is negative"),
            ("--bs", "4q", "--bs"),
            ("--prepare", "ones", "--prepare"),
        ] {
            let e = command()
                .try_get_matches_from(["x", flag, value])
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{flag} {value}: {e}");
        }
    }
}
