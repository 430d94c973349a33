//! Raw profile: the TOML file as written, before any checking of values.
//!
//! Serde enforces only the shape here: known keys (`deny_unknown_fields` everywhere, so a
//! typo is an error naming the key) and basic types. Sizes, durations, block-size lists,
//! hot bands and disk lists stay text, and integers stay `i64`, so that `validate` can
//! report a bad value with its dotted key and, when an override replaced it, not complain
//! about it at all. Absent keys are `None`; defaults are applied by `validate`.
//! Serializing a `RawProfile` writes the same TOML shape back (absent keys omitted); `emit`
//! uses that to print a resolved plan as a profile that runs.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::error::ProfileError;

/// A whole profile file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub fleet: RawFleet,
    #[serde(default)]
    pub timing: RawTiming,
    #[serde(default, skip_serializing_if = "RawData::is_empty")]
    pub data: RawData,
    #[serde(default, rename = "stream")]
    pub streams: Vec<RawStream>,
    /// Where the profile came from: a file path or `built-in NAME`. Used in errors.
    #[serde(skip)]
    pub origin: String,
}

/// `[fleet]`
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFleet {
    pub workers: Option<i64>,
    pub disks_per_worker: Option<i64>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub disk_size: Option<String>,
    pub threads_per_disk: Option<i64>,
    pub qd: Option<i64>,
    pub io_threads: Option<i64>,
    pub cpus: Option<String>,
}

/// `[timing]`
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTiming {
    pub prepare: Option<String>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub warmup: Option<String>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub duration: Option<String>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub interval: Option<String>,
    pub rate_iops: Option<f64>,
    pub arrival: Option<String>,
    pub verify: Option<bool>,
}

/// `[data]`
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawData {
    pub pattern: Option<String>,
    pub dedupe_ratio: Option<f64>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub dedupe_unit: Option<String>,
    pub compress_ratio: Option<f64>,
    pub write_through: Option<bool>,
}

impl RawData {
    /// No key of the table is set.
    pub fn is_empty(&self) -> bool {
        *self == RawData::default()
    }
}

/// One `[[stream]]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStream {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub bs: Option<String>,
    pub read_pct: Option<f64>,
    pub random_pct: Option<f64>,
    #[serde(default, deserialize_with = "text_or_number")]
    pub align: Option<String>,
    pub weight: Option<i64>,
    pub rate_iops: Option<f64>,
    pub qd: Option<i64>,
    pub hot_bands: Option<String>,
    pub zipf: Option<f64>,
    pub working_set_pct: Option<f64>,
    pub disks: Option<RawDisks>,
}

/// `disks = "all" | "0-3" | "4,5" | [0, 1]`
#[derive(Debug, Clone, PartialEq)]
pub enum RawDisks {
    Text(String),
    List(Vec<i64>),
}

impl Serialize for RawDisks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RawDisks::Text(t) => s.serialize_str(t),
            RawDisks::List(l) => l.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for RawDisks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDisks;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"all\", a list of disk indexes like [0, 1], or a string like \"0-3\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDisks, E> {
                Ok(RawDisks::Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDisks, E> {
                Ok(RawDisks::List(vec![v]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawDisks, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element::<i64>()? {
                    out.push(v);
                }
                Ok(RawDisks::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Sizes and durations may be written as a string (`"4k"`, `"10s"`) or a bare number
/// (bytes, seconds); both are kept as text for `validate` to parse.
fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string like \"4k\" or \"10s\", or a number")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
    }
    d.deserialize_any(V)
}

/// Parse profile TOML. `origin` (a path or `built-in NAME`) prefixes every error.
pub fn parse_toml(text: &str, origin: &str) -> Result<RawProfile, ProfileError> {
    match toml::from_str::<RawProfile>(text) {
        Ok(mut raw) => {
            raw.origin = origin.to_string();
            Ok(raw)
        }
        Err(e) => Err(ProfileError::Parse {
            origin: origin.to_string(),
            key: e.span().and_then(|s| key_at(text, s.start)),
            message: e.to_string().trim_end().to_string(),
        }),
    }
}

/// The dotted key at byte `pos` of `text`: the table header in force there plus the key
/// on that line (`fleet.foo`, `stream[1].bs`). Best effort, for `ProfileError::key` and
/// for any TOML file read by the same rules (a cluster file in `iofleet-capacity`).
pub fn key_at(text: &str, pos: usize) -> Option<String> {
    let pos = pos.min(text.len());
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    let line = text[line_start..line_end].trim();
    if line.starts_with('[') {
        // An unknown table header such as `[flet]`: the header is the key.
        let header = line.trim_start_matches('[').split(']').next()?.trim();
        return (!header.is_empty()).then(|| header.to_string());
    }
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('#') {
        return None;
    }
    let mut table = String::new();
    let mut streams = 0usize;
    for l in text[..line_start].lines() {
        let l = l.trim();
        if let Some(h) = l.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            if h.trim() == "stream" {
                table = format!("stream[{streams}]");
                streams += 1;
            } else {
                table = h.trim().to_string();
            }
        } else if let Some(h) = l.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = h.trim().to_string();
        }
    }
    Some(if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_named_with_origin() {
        let text = "name = \"x\"\n[fleet]\nworkers = 2\nfoo = 1\n";
        let e = parse_toml(text, "my.toml").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("my.toml: fleet.foo: "), "{msg}");
        assert!(msg.contains("unknown field `foo`"), "{msg}");
        assert_eq!(e.key(), Some("fleet.foo"));
    }

    #[test]
    fn unknown_key_in_second_stream() {
        let text = "name = \"x\"\n[[stream]]\nbs = \"4k\"\n[[stream]]\nbs = \"8k\"\nreadpct = 5\n";
        let e = parse_toml(text, "p.toml").unwrap_err();
        assert_eq!(e.key(), Some("stream[1].readpct"));
        assert!(e.to_string().contains("unknown field `readpct`"), "{e}");
    }

    #[test]
    fn unknown_top_level_key() {
        let e = parse_toml("name = \"x\"\nfoo = 1\n", "p.toml").unwrap_err();
        assert_eq!(e.key(), Some("foo"));
        let e = parse_toml("name = \"x\"\n[flet]\nworkers = 1\n", "p.toml").unwrap_err();
        assert!(e.to_string().contains("unknown field `flet`"), "{e}");
        assert_eq!(e.key(), Some("flet"));
    }

    #[test]
    fn wrong_type_is_located() {
        let e = parse_toml("name = \"x\"\n[fleet]\nqd = \"eight\"\n", "p.toml").unwrap_err();
        assert_eq!(e.key(), Some("fleet.qd"));
    }

    #[test]
    fn sizes_and_durations_accept_numbers() {
        let raw = parse_toml(
            "name = \"x\"\n[fleet]\ndisk_size = 1048576\n[timing]\nduration = 10\n\
             [[stream]]\nbs = 4096\nread_pct = 70\nrandom_pct = 100\ndisks = [0, 1]\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(raw.fleet.disk_size.as_deref(), Some("1048576"));
        assert_eq!(raw.timing.duration.as_deref(), Some("10"));
        assert_eq!(raw.streams[0].bs.as_deref(), Some("4096"));
        assert_eq!(raw.streams[0].read_pct, Some(70.0));
        assert_eq!(raw.streams[0].disks, Some(RawDisks::List(vec![0, 1])));
        assert_eq!(raw.origin, "p.toml");
    }
}
