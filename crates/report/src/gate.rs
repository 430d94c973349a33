//! The regression gate behind `iofleet compare --fail-if`. A condition names a metric,
//! an operator and a threshold, and describes a *failure*: `iops < -5%` fails when a
//! run's IOPS are more than 5% below the baseline's; `read.p99 > 2ms` fails when a run's
//! read p99 is above 2 ms. Conditions are checked for every compared run except the
//! baseline. The grammar is documented in docs/compare.md; parse errors name
//! `--fail-if` and say what was expected.

use std::fmt;
use std::str::FromStr;

use crate::compare::{fmt_change, fmt_opt, fmt_value, Comparison, Metric, Unit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// What the threshold is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// Signed % change against the baseline.
    ChangePct(f64),
    /// An absolute value in the metric's unit (latencies in µs).
    Absolute(f64),
}

/// One parsed `--fail-if` condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The expression as the user wrote it.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    pub threshold: Threshold,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("--fail-if '{expr}': {problem}")]
pub struct GateError {
    pub expr: String,
    pub problem: String,
}

fn parse_number(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Split a value like `2ms`, `-5%`, `150k` into its number and unit suffix.
fn split_unit(v: &str) -> (&str, &str) {
    let end = v
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || ((*c == '-' || *c == '+') && *i == 0)))
        .map_or(v.len(), |(i, _)| i);
    (v[..end].trim(), v[end..].trim())
}

impl FromStr for Condition {
    type Err = GateError;

    fn from_str(expr: &str) -> Result<Self, GateError> {
        let err = |problem: String| GateError {
            expr: expr.to_string(),
            problem,
        };
        let text = expr.trim();
        if text.is_empty() {
            return Err(err(
                "empty condition; write METRIC OP VALUE, e.g. 'iops < -5%'".into(),
            ));
        }
        let pos = text
            .find(['<', '>'])
            .ok_or_else(|| err("no operator; use one of < <= > >= (e.g. 'iops < -5%')".into()))?;
        let (lhs, rest) = text.split_at(pos);
        let (op, rhs) = if let Some(r) = rest.strip_prefix("<=") {
            (Op::Le, r)
        } else if let Some(r) = rest.strip_prefix(">=") {
            (Op::Ge, r)
        } else if let Some(r) = rest.strip_prefix('<') {
            (Op::Lt, r)
        } else {
            (Op::Gt, &rest[1..])
        };
        let name = lhs.trim();
        if name.is_empty() {
            return Err(err(format!(
                "no metric before '{}'; metrics are {}",
                op.as_str(),
                Metric::known_names()
            )));
        }
        let metric = Metric::parse(name).ok_or_else(|| {
            err(format!(
                "unknown metric '{name}'; metrics are {}",
                Metric::known_names()
            ))
        })?;
        let value = rhs.trim();
        if value.is_empty() {
            return Err(err(format!(
                "no value after '{}'; write a % change such as -5% or an absolute value such as 2ms",
                op.as_str()
            )));
        }
        if value.starts_with(['<', '>', '=']) {
            return Err(err(format!(
                "unknown operator '{}{}'; use one of < <= > >=",
                op.as_str(),
                &value[..1]
            )));
        }
        let (num, unit) = split_unit(value);
        let n = parse_number(num).ok_or_else(|| {
            err(format!(
                "'{value}' is not a number with an optional unit (e.g. -5%, +10%, 2ms, 150k)"
            ))
        })?;
        let threshold = if unit == "%" {
            Threshold::ChangePct(n)
        } else {
            if num.starts_with('+') {
                return Err(err(format!(
                    "'{value}': a signed value must be a % change (e.g. +10%)"
                )));
            }
            Threshold::Absolute(absolute(metric, n, unit).map_err(err)?)
        };
        Ok(Condition {
            text: text.to_string(),
            metric,
            op,
            threshold,
        })
    }
}

/// Convert an absolute threshold to the metric's unit.
fn absolute(metric: Metric, n: f64, unit: &str) -> Result<f64, String> {
    let u = unit.to_ascii_lowercase();
    match metric.unit() {
        Unit::Micros | Unit::MicrosPerIo | Unit::Millis => {
            // In µs, then in the metric's own unit.
            let per = if metric.unit() == Unit::Millis { 1e3 } else { 1.0 };
            let scale = match u.as_str() {
                "ns" => 1e-3 / per,
                "us" | "µs" => 1.0 / per,
                "ms" => 1e3 / per,
                "s" => 1e6 / per,
                "" => {
                    return Err(format!(
                        "{} is a latency: give a unit (ns, us, ms or s), e.g. '{} > 2ms', or a % change",
                        metric.path(),
                        metric.path()
                    ))
                }
                _ => {
                    return Err(format!(
                        "unknown unit '{unit}' for {}; use ns, us, ms or s",
                        metric.path()
                    ))
                }
            };
            Ok(n * scale)
        }
        Unit::Iops | Unit::Count | Unit::Io => {
            let scale = match u.as_str() {
                "" | "iops" => 1.0,
                "k" => 1e3,
                "m" => 1e6,
                _ => {
                    return Err(format!(
                        "unknown unit '{unit}' for {}; use a plain number or k / M (e.g. 150k)",
                        metric.path()
                    ))
                }
            };
            Ok(n * scale)
        }
        Unit::MBps => match u.as_str() {
            "" | "mb/s" => Ok(n),
            "gb/s" => Ok(n * 1e3),
            _ => Err(format!(
                "unknown unit '{unit}' for {}; use MB/s or GB/s",
                metric.path()
            )),
        },
        Unit::Percent => match u.as_str() {
            "" => Ok(n),
            _ => Err(format!(
                "unknown unit '{unit}' for {}: its absolute value is a plain number of percent (e.g. 'cpu > 80'); a trailing % means a change against the baseline",
                metric.path()
            )),
        },
    }
}

/// The outcome of one condition for one run.
#[derive(Clone, Debug)]
pub struct Check {
    pub condition: String,
    pub run: String,
    pub violated: bool,
    pub detail: String,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} --fail-if '{}': run {}: {}",
            if self.violated { "FAIL" } else { "ok  " },
            self.condition,
            self.run,
            self.detail
        )
    }
}

/// Check every condition against every run but the baseline.
pub fn evaluate(cmp: &Comparison<'_>, conditions: &[Condition]) -> Vec<Check> {
    let mut checks = Vec::new();
    for c in conditions {
        let m = c.metric;
        let base = m.value(&cmp.base().result);
        for (i, run) in cmp.others() {
            let v = m.value(&run.result);
            let unit = m.unit().suffix();
            let (violated, detail) = match (c.threshold, base, v) {
                // A change neither run measured cannot have regressed; one measured by
                // only one of them cannot be judged, and fails the gate. An absolute
                // limit on a figure this run did not measure fails: a gate must not
                // pass on what it never evaluated.
                (Threshold::ChangePct(_), None, None) => {
                    (false, format!("{} not measured in either run", m.path()))
                }
                (Threshold::ChangePct(_), _, None) | (Threshold::ChangePct(_), None, _) => (
                    true,
                    format!(
                        "{} {} {unit} vs baseline {} {unit}: cannot compare a figure measured in only one run",
                        m.path(),
                        fmt_opt(v, m.unit()),
                        fmt_opt(base, m.unit()),
                    ),
                ),
                (Threshold::Absolute(_), _, None) => (
                    true,
                    format!("{} not measured in this run (baseline {} {unit})", m.path(), fmt_opt(base, m.unit())),
                ),
                (Threshold::ChangePct(t), Some(base), Some(v)) => {
                    let change = cmp.change(m, i);
                    // An undefined change (baseline 0) counts as +∞.
                    let x = change.unwrap_or(f64::INFINITY);
                    (
                        c.op.holds(x, t),
                        format!(
                            "{} {} {unit} vs baseline {} {unit} = {} (limit {} {t:+}%)",
                            m.path(),
                            fmt_value(v, m.unit()),
                            fmt_value(base, m.unit()),
                            fmt_change(change),
                            c.op.as_str()
                        ),
                    )
                }
                (Threshold::Absolute(t), _, Some(v)) => (
                    c.op.holds(v, t),
                    format!(
                        "{} {} {unit} (limit {} {} {unit})",
                        m.path(),
                        fmt_value(v, m.unit()),
                        c.op.as_str(),
                        fmt_value(t, m.unit())
                    ),
                ),
            };
            checks.push(Check {
                condition: c.text.clone(),
                run: run.id.clone(),
                violated,
                detail: detail.replace("  ", " "),
            });
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Condition, GateError> {
        s.parse()
    }

    #[test]
    fn parses_changes_and_absolutes() {
        let c = p("iops < -5%").unwrap();
        assert_eq!(c.metric, Metric::parse("iops").unwrap());
        assert_eq!(c.op, Op::Lt);
        assert_eq!(c.threshold, Threshold::ChangePct(-5.0));
        let c = p(" read.p99>+10% ").unwrap();
        assert_eq!(c.op, Op::Gt);
        assert_eq!(c.threshold, Threshold::ChangePct(10.0));
        assert_eq!(
            p("write.p99_9 >= 2ms").unwrap().threshold,
            Threshold::Absolute(2000.0)
        );
        assert_eq!(p("all.max <= 1.5s").unwrap().op, Op::Le);
        assert_eq!(
            p("mean > 250us").unwrap().threshold,
            Threshold::Absolute(250.0)
        );
        assert_eq!(
            p("iops < 150k").unwrap().threshold,
            Threshold::Absolute(150_000.0)
        );
        assert_eq!(
            p("mbps < 1.2GB/s").unwrap().threshold,
            Threshold::Absolute(1200.0)
        );
        assert_eq!(p("cpu > 80").unwrap().threshold, Threshold::Absolute(80.0));
        assert_eq!(
            p("read.p99.9 > 5%").unwrap().metric,
            Metric::parse("read.p99_9").unwrap()
        );
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (expr, needle) in [
            ("", "empty condition"),
            ("iops -5%", "no operator"),
            ("< -5%", "no metric"),
            ("iopz < -5%", "unknown metric 'iopz'"),
            ("iops <", "no value"),
            ("iops << 5%", "unknown operator"),
            ("iops < five", "not a number"),
            ("read.p99 > 2", "give a unit"),
            ("read.p99 > 2parsecs", "unknown unit"),
            ("iops < 5 widgets", "unknown unit"),
            ("iops < +5", "signed value"),
            ("cpu > 80pct", "unknown unit"),
        ] {
            let e = p(expr).expect_err(expr);
            let msg = e.to_string();
            assert!(msg.starts_with("--fail-if '"), "{msg}");
            assert!(msg.contains(needle), "{expr}: {msg}");
        }
    }
}
