//! Units as types: byte sizes and durations, and their text forms.
//!
//! Sizes use binary multiples for every suffix (`4k` = `4KiB` = `4KB` = 4096 bytes), as
//! fio does by default, because block sizes and disk sizes are quoted that way in the
//! field. Durations accept `ms`, `s`, `m`, `h` (a bare number is seconds).
//! Parsing returns a plain message; callers wrap it with the key or flag it came from.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A number of bytes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub const GIB: u64 = 1024 * 1024 * 1024;
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Bytes {
    /// Shortest exact binary form: 4096 -> "4k", 1536 -> "1536", 1073741824 -> "1g".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (unit, suffix) in [
            (1u64 << 40, "t"),
            (1 << 30, "g"),
            (1 << 20, "m"),
            (1 << 10, "k"),
        ] {
            if v >= unit && v.is_multiple_of(unit) {
                return write!(f, "{}{}", v / unit, suffix);
            }
        }
        write!(f, "{v}")
    }
}

/// Parse a CPU list as `taskset -c` takes it: `0-3,6,8-9` (ascending, no repeats
/// kept). Returns the CPUs in ascending order.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim) {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{s}' in '{text}' is not a CPU number (example: 0-3,6)"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi {
            return Err(format!("'{part}' in '{text}' is a descending range"));
        }
        if hi >= 4096 {
            return Err(format!("CPU {hi} is beyond any CPU this kernel can have"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parse `4096`, `4k`, `4K`, `4KiB`, `4KB`, `1.5m`, `10g`, `1t` (binary multiples).
pub fn parse_bytes(text: &str) -> Result<Bytes, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty size".into());
    }
    if t.starts_with('-') {
        return Err(format!("'{text}' is negative: a size is 0 or more bytes"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "'{text}' has an unknown size suffix '{other}' (use k, m, g or t)"
            ))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, 4k, 256KiB, 10g)"))?;
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(Bytes(bytes as u64))
}

/// Parse `10s`, `500ms`, `5m`, `1h`, `1.5s` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{text}' is negative: a duration is 0 or more"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let scale = match suffix.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "'{text}' is not a duration (examples: 500ms, 10s, 5m, 1h)"
            ))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 500ms, 10s, 5m, 1h)"))?;
    let secs = value * scale;
    if !secs.is_finite() || secs < 0.0 || secs > 1e9 {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The civil date (year, month 1–12, day 1–31) of a day counted from 1970-01-01, in the
/// proleptic Gregorian calendar (Howard Hinnant's days-to-civil algorithm).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The day counted from 1970-01-01 of a civil date (year, month 1–12, day 1–31): the
/// inverse of `civil_from_days` (Howard Hinnant's days-from-civil algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Format a duration the way `parse_duration` reads it back.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}s", d.as_secs_f64())
    } else if !ms.is_multiple_of(1000) {
        format!("{ms}ms")
    } else {
        let s = d.as_secs();
        if s != 0 && s.is_multiple_of(3600) {
            format!("{}h", s / 3600)
        } else if s != 0 && s.is_multiple_of(60) {
            format!("{}m", s / 60)
        } else {
            format!("{s}s")
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn civil_dates_across_leap_days_centuries_and_the_epoch() {
        for (days, date) in [
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (11_016, (2000, 2, 29)),
            (19_723, (2024, 1, 1)),
            (47_541, (2100, 3, 1)),
        ] {
            assert_eq!(civil_from_days(days), date, "{days}");
            assert_eq!(days_from_civil(date.0, date.1, date.2), days, "{date:?}");
        }
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    use super::*;
    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), [0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list(" 5 , 1-2,2").unwrap(), [1, 2, 5]);
        assert!(parse_cpu_list("3-1").unwrap_err().contains("descending"));
        assert!(parse_cpu_list("a").unwrap_err().contains("'a'"));
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("0-99999").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("4k").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("4KiB").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("1.5k").unwrap(), Bytes(1536));
        assert_eq!(parse_bytes("10g").unwrap(), Bytes(10 << 30));
        assert!(parse_bytes("4x").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("1.1").is_err());
        assert_eq!(Bytes(4096).to_string(), "4k");
        assert_eq!(Bytes(1536).to_string(), "1536");
        assert_eq!(Bytes(10 << 30).to_string(), "10g");
    }

    #[test]
    fn a_negative_size_or_duration_is_called_negative() {
        for text in ["-5g", " -4k", "-1"] {
            let e = parse_bytes(text).unwrap_err();
            assert!(e.contains("is negative") && !e.contains("suffix"), "{e}");
        }
        assert!(parse_duration("-5s").unwrap_err().contains("is negative"));
        // A bad suffix is still one.
        assert!(parse_bytes("5q")
            .unwrap_err()
            .contains("unknown size suffix 'q'"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("x").is_err());
        for d in ["10s", "500ms", "2m", "1h", "0s"] {
            assert_eq!(format_duration(parse_duration(d).unwrap()), d);
        }
    }
}
