//! Latency objectives (`p99<=3ms`, `read.p95<=2ms`, `write.mean<=500us`) and their
//! verdict on a run's summary. This is the one grammar of an objective: `find-max` and
//! `plan` parse `--slo` with it, the store keeps the text as a label, and the report
//! parses the label back to draw the objective's line.
//!
//! Grammar: `[all.|read.|write.]STAT<=LATENCY`, where STAT is one of `p50`, `p90`,
//! `p95`, `p99`, `p99.9`, `mean`, `max`, and LATENCY a number with a unit `ns`, `us`
//! (or `µs`), `ms` or `s` (a bare number is refused: a latency has no natural unit).
//! `<` is read as `<=`. Spaces are ignored. It does not evaluate anything but latency.

use std::fmt;
use std::str::FromStr;

use crate::result::RunSummary;
use crate::summary::{LatencySummary, OpSummary};

/// Which operations an objective is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ops {
    All,
    Read,
    Write,
}

/// Which latency figure an objective bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    P50,
    P90,
    P95,
    P99,
    P99_9,
    Mean,
    Max,
}

impl Stat {
    const NAMES: [(&'static str, Stat); 7] = [
        ("p50", Stat::P50),
        ("p90", Stat::P90),
        ("p95", Stat::P95),
        ("p99", Stat::P99),
        ("p99.9", Stat::P99_9),
        ("mean", Stat::Mean),
        ("max", Stat::Max),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, s)| *s == self).unwrap().0
    }

    /// This figure of a latency summary, µs.
    pub fn of(self, l: &LatencySummary) -> f64 {
        match self {
            Stat::P50 => l.p50,
            Stat::P90 => l.p90,
            Stat::P95 => l.p95,
            Stat::P99 => l.p99,
            Stat::P99_9 => l.p99_9,
            Stat::Mean => l.mean,
            Stat::Max => l.max,
        }
    }
}

/// One objective: `ops.stat <= limit_us`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Objective {
    pub ops: Ops,
    pub stat: Stat,
    /// The limit, µs.
    pub limit_us: f64,
}

/// Why an objective does not parse (the text and what is wrong).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{text}' is not an objective: {why} (write e.g. p99<=3ms or read.p95<=500us)")]
pub struct ObjectiveError {
    pub text: String,
    pub why: String,
}

/// A latency with its unit, in µs: `3ms`, `500us`, `500µs`, `2.5ms`, `800ns`, `1s`.
fn parse_latency_us(s: &str) -> Result<f64, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{s}' has no unit (ns, us, ms or s)"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{num}' is not a number"))?;
    let scale = match unit {
        "ns" => 1e-3,
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(format!("unknown unit '{unit}' (ns, us, ms or s)")),
    };
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("the limit '{s}' must be above zero"));
    }
    Ok(v * scale)
}

impl FromStr for Objective {
    type Err = ObjectiveError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |why: String| ObjectiveError {
            text: text.to_string(),
            why,
        };
        let s: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = s
            .split_once("<=")
            .or_else(|| s.split_once('<'))
            .ok_or_else(|| err("no '<=' (an objective is an upper bound)".into()))?;
        let (ops, stat) = match lhs.split_once('.') {
            Some((o @ ("all" | "read" | "write"), st)) => (Some(o), st),
            _ => (None, lhs),
        };
        let ops = match ops {
            None | Some("all") => Ops::All,
            Some("read") => Ops::Read,
            _ => Ops::Write,
        };
        let stat = Stat::NAMES
            .iter()
            .find(|(n, _)| *n == stat)
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                err(format!(
                    "'{stat}' is not a latency figure (p50, p90, p95, p99, p99.9, mean or max, \
                     optionally after all., read. or write.)"
                ))
            })?;
        let limit_us = parse_latency_us(rhs).map_err(err)?;
        Ok(Objective {
            ops,
            stat,
            limit_us,
        })
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops = match self.ops {
            Ops::All => "",
            Ops::Read => "read.",
            Ops::Write => "write.",
        };
        let l = self.limit_us;
        let limit = if l >= 1000.0 && (l / 1000.0).fract().abs() < 1e-9 {
            format!("{}ms", l / 1000.0)
        } else {
            format!("{l}us")
        };
        write!(f, "{ops}{}<={limit}", self.stat.name())
    }
}

/// The measured value of an objective on one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// The figure (µs) and whether it is within the limit.
    Measured { value_us: f64, met: bool },
    /// No I/O of that kind completed: an objective on reads of a write-only workload.
    NoIo,
}

impl Objective {
    fn ops_of<'a>(&self, s: &'a RunSummary) -> &'a OpSummary {
        match self.ops {
            Ops::All => &s.all,
            Ops::Read => &s.read,
            Ops::Write => &s.write,
        }
    }

    /// The figure this objective bounds on `s`, µs (None when no such I/O completed).
    pub fn value_us(&self, s: &RunSummary) -> Option<f64> {
        self.ops_of(s).latency_us.as_ref().map(|l| self.stat.of(l))
    }

    pub fn verdict(&self, s: &RunSummary) -> Verdict {
        match self.value_us(s) {
            Some(v) => Verdict::Measured {
                value_us: v,
                met: v <= self.limit_us,
            },
            None => Verdict::NoIo,
        }
    }
}

/// A list of objectives as the store keeps them in one label: `p99<=3ms;read.p95<=2ms`.
pub fn join(objectives: &[Objective]) -> String {
    objectives
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

/// The inverse of [`join`].
pub fn split(s: &str) -> Result<Vec<Objective>, ObjectiveError> {
    s.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_print_back() {
        let o: Objective = "p99<=3ms".parse().unwrap();
        assert_eq!(
            o,
            Objective {
                ops: Ops::All,
                stat: Stat::P99,
                limit_us: 3000.0
            }
        );
        let o: Objective = " read.p99.9 <= 500us".parse().unwrap();
        assert_eq!((o.ops, o.stat, o.limit_us), (Ops::Read, Stat::P99_9, 500.0));
        let o: Objective = "write.mean<2.5ms".parse().unwrap();
        assert_eq!(
            (o.ops, o.stat, o.limit_us),
            (Ops::Write, Stat::Mean, 2500.0)
        );
        assert_eq!("all.max<=800ns".parse::<Objective>().unwrap().limit_us, 0.8);
        for text in [
            "p99<=3ms",
            "read.p95<=500us",
            "write.p99.9<=1.5ms",
            "max<=1s",
        ] {
            let o: Objective = text.parse().unwrap();
            assert_eq!(o.to_string().parse::<Objective>().unwrap(), o, "{text}");
        }
        let list = split("p99<=3ms;read.p95<=2ms").unwrap();
        assert_eq!(split(&join(&list)).unwrap(), list);
    }

    #[test]
    fn a_bad_objective_says_what_is_wrong() {
        for (bad, says) in [
            ("p99>=3ms", "no '<='"),
            ("p98<=3ms", "'p98' is not a latency figure"),
            ("read.p98<=3ms", "'p98'"),
            ("other.p99<=3ms", "'other.p99'"),
            ("p99<=3", "no unit"),
            ("p99<=3min", "unknown unit 'min'"),
            ("p99<=0ms", "above zero"),
            ("p99<=ms", "'' is not a number"),
        ] {
            let e = bad.parse::<Objective>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn the_verdict_reads_the_right_figure() {
        let mut s = RunSummary {
            all: OpSummary::default(),
            read: OpSummary::default(),
            write: OpSummary::default(),
            iops_median_interval: None,
            outstanding_io: Default::default(),
            cpu: None,
            memory: None,
            errors: Default::default(),
            generator: None,
            verify: None,
            net: None,
            observers: None,
        };
        let o: Objective = "read.p99<=1ms".parse().unwrap();
        assert_eq!(o.verdict(&s), Verdict::NoIo);
        s.read.latency_us = Some(LatencySummary {
            p99: 900.0,
            ..Default::default()
        });
        assert_eq!(
            o.verdict(&s),
            Verdict::Measured {
                value_us: 900.0,
                met: true
            }
        );
        let o: Objective = "read.p99<=800us".parse().unwrap();
        assert!(matches!(
            o.verdict(&s),
            Verdict::Measured { met: false, .. }
        ));
        // The write side is not the read side.
        let o: Objective = "write.p99<=800us".parse().unwrap();
        assert_eq!(o.verdict(&s), Verdict::NoIo);
    }
}
