//! Objectives: latency (`p99<=3ms`, `read.p95<=2ms`, `write.mean<=500us`, an
//! [`Objective`]) and host CPU (`cpu<=40%`, `observers.cpu<=40%`, a [`CpuObjective`]),
//! either one an [`Slo`], and their figure on a run's summary. This is the one grammar
//! of an objective: `find-max` and `plan` parse `--slo` with it (latency and CPU), `run`'s
//! live view takes latency objectives only, the store keeps the text as a label, and the
//! report parses the label back to draw the latency objectives' lines.
//!
//! Grammar: `[all.|read.|write.]STAT<=LATENCY`, where STAT is one of `p50`, `p90`,
//! `p95`, `p99`, `p99.9`, `mean`, `max`, and LATENCY a number with a unit `ns`, `us`
//! (or `µs`), `ms` or `s` (a bare number is refused: a latency has no natural unit); or
//! `[workers.|observers.]cpu<=PERCENT%`, the busy CPU of the workers' hosts (or of the
//! observer hosts) as a share of all their cores, the mean over the hosts
//! (`summary.cpu.host_pct`, `summary.observers.cpu.host_pct`), PERCENT above 0 and at
//! most 100 (the `%` is required). `<` is read as `<=`. Spaces are ignored.

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
#[error("'{text}' is not an objective: {why} (write e.g. p99<=3ms, read.p95<=500us or cpu<=40%)")]
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

/// Whose CPU a CPU objective bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuOf {
    /// The hosts that run the workers (`summary.cpu`).
    Workers,
    /// The observer hosts (`summary.observers`).
    Observers,
}

/// A host CPU objective: `of`'s busy CPU, percent of all cores, at most `limit_pct`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuObjective {
    pub of: CpuOf,
    pub limit_pct: f64,
}

impl CpuObjective {
    /// The figure this objective bounds on `s`, percent (None when not measured, or no
    /// observer host).
    pub fn value_pct(&self, s: &RunSummary) -> Option<f64> {
        match self.of {
            CpuOf::Workers => s.cpu.as_ref().map(|c| c.host_pct),
            CpuOf::Observers => s.observers.as_ref().map(|o| o.cpu.host_pct),
        }
    }
}

impl fmt::Display for CpuObjective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let of = match self.of {
            CpuOf::Workers => "",
            CpuOf::Observers => "observers.",
        };
        write!(f, "{of}cpu<={}%", self.limit_pct)
    }
}

/// One objective of `find-max` and `plan`: latency or host CPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slo {
    Latency(Objective),
    Cpu(CpuObjective),
}

impl Slo {
    /// The limit, in the objective's unit (µs for latency, % for CPU).
    pub fn limit(&self) -> f64 {
        match self {
            Slo::Latency(o) => o.limit_us,
            Slo::Cpu(c) => c.limit_pct,
        }
    }

    /// The objective's unit: `µs` or `%`.
    pub fn unit(&self) -> &'static str {
        match self {
            Slo::Latency(_) => "µs",
            Slo::Cpu(_) => "%",
        }
    }

    /// The figure this objective bounds on `s`, in its unit (None when there is none:
    /// no I/O of that kind, CPU not measured, no observer host).
    pub fn value(&self, s: &RunSummary) -> Option<f64> {
        match self {
            Slo::Latency(o) => o.value_us(s),
            Slo::Cpu(c) => c.value_pct(s),
        }
    }

    /// The latency objective, if it is one.
    pub fn latency(&self) -> Option<&Objective> {
        match self {
            Slo::Latency(o) => Some(o),
            Slo::Cpu(_) => None,
        }
    }
}

impl FromStr for Slo {
    type Err = ObjectiveError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let lhs = s.split('<').next().unwrap_or_default();
        let of = match lhs {
            "cpu" | "workers.cpu" => CpuOf::Workers,
            "observers.cpu" => CpuOf::Observers,
            _ => return text.parse().map(Slo::Latency),
        };
        let err = |why: String| ObjectiveError {
            text: text.to_string(),
            why,
        };
        let rhs = s[lhs.len()..]
            .trim_start_matches('<')
            .trim_start_matches('=');
        let num = rhs.strip_suffix('%').ok_or_else(|| {
            err(format!(
                "'{rhs}' has no '%' (a CPU limit is a percentage of all cores)"
            ))
        })?;
        let v: f64 = num
            .parse()
            .map_err(|_| err(format!("'{num}' is not a number")))?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(err(format!(
                "the limit '{rhs}' must be above 0% and at most 100%"
            )));
        }
        Ok(Slo::Cpu(CpuObjective { of, limit_pct: v }))
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slo::Latency(o) => o.fmt(f),
            Slo::Cpu(c) => c.fmt(f),
        }
    }
}

/// A list of objectives as the store keeps them in one label: `p99<=3ms;read.p95<=2ms`.
pub fn join<T: fmt::Display>(objectives: &[T]) -> String {
    objectives
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

/// The inverse of [`join`].
pub fn split_all(s: &str) -> Result<Vec<Slo>, ObjectiveError> {
    s.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect()
}

/// The latency objectives of a [`join`]ed list (its CPU objectives left out).
pub fn split(s: &str) -> Result<Vec<Objective>, ObjectiveError> {
    Ok(split_all(s)?
        .into_iter()
        .filter_map(|o| o.latency().copied())
        .collect())
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
    fn cpu_objectives_parse_print_back_and_mix_with_latency() {
        let o: Slo = "cpu<=40%".parse().unwrap();
        assert_eq!(
            o,
            Slo::Cpu(CpuObjective {
                of: CpuOf::Workers,
                limit_pct: 40.0
            })
        );
        assert_eq!(
            (o.limit(), o.unit(), o.to_string().as_str()),
            (40.0, "%", "cpu<=40%")
        );
        let o: Slo = " observers.cpu < 12.5 %".parse().unwrap();
        assert_eq!(o.to_string(), "observers.cpu<=12.5%");
        assert_eq!(
            "workers.cpu<=40%".parse::<Slo>().unwrap().to_string(),
            "cpu<=40%"
        );
        let o: Slo = "read.p99<=2ms".parse().unwrap();
        assert_eq!((o.limit(), o.unit()), (2000.0, "µs"));
        let both: Vec<Slo> = vec!["p99<=3ms".parse().unwrap(), "cpu<=40%".parse().unwrap()];
        let text = join(&both);
        assert_eq!(text, "p99<=3ms;cpu<=40%");
        assert_eq!(split_all(&text).unwrap(), both);
        // The latency objectives alone, for the report's lines.
        assert_eq!(
            split(&text).unwrap(),
            vec!["p99<=3ms".parse::<Objective>().unwrap()]
        );
        for (bad, says) in [
            ("cpu<=40", "has no '%'"),
            ("cpu<=0%", "above 0% and at most 100%"),
            ("cpu<=140%", "above 0% and at most 100%"),
            ("cpu<=x%", "'x' is not a number"),
            ("gpu<=40%", "'gpu' is not a latency figure"),
        ] {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
        // `run`'s live view takes latency objectives only.
        assert!("cpu<=40%".parse::<Objective>().is_err());
    }

    #[test]
    fn a_cpu_objective_reads_the_workers_or_the_observers_hosts() {
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
        let workers: Slo = "cpu<=40%".parse().unwrap();
        let observers: Slo = "observers.cpu<=40%".parse().unwrap();
        assert_eq!((workers.value(&s), observers.value(&s)), (None, None));
        s.cpu = Some(crate::result::CpuSummary {
            host_pct: 37.5,
            ..Default::default()
        });
        let mut o = crate::HostResources::default();
        o.cpu.host_pct = 12.0;
        s.observers = Some(o);
        assert_eq!(
            (workers.value(&s), observers.value(&s)),
            (Some(37.5), Some(12.0))
        );
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
