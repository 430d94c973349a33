//! Run validity: whether a run kept enough of its fleet to stand for it. The rule is a
//! quorum of hosts (`MinHosts`: `--min-hosts N|P%`, `--tolerate-host-loss`, or neither,
//! every host), and `judge` is the one place it is applied, to a finished result's
//! `hosts` (their `lost_at_s`) alone, so a fleet of SSH hosts, Kubernetes pods or agents
//! that joined is judged alike. A run below its quorum keeps its figures: it is stored
//! and printed `valid: false` with the reasons, and the commands that read it decide
//! what that means (exit code 3, a refused `compare` baseline). This module neither
//! stops a run nor reads a command line.

use std::fmt;
use std::str::FromStr;

use crate::result::{HostSummary, Quorum, Validity};

/// How many of the hosts that had work must keep running to the end of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinHosts {
    /// Every host, observers too (neither `--min-hosts` nor `--tolerate-host-loss`).
    Every,
    /// Any number may be lost (`--tolerate-host-loss`).
    Any,
    /// At least this many hosts with work (`--min-hosts N`, N ≥ 1).
    Hosts(u32),
    /// At least this share of the hosts with work, rounded up (`--min-hosts P%`), in
    /// hundredths of a percent (1 to 10,000).
    Percent(u32),
}

/// Why a `--min-hosts` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinHostsError {
    #[error("--min-hosts {0}: not a number of hosts or a percentage (e.g. 15 or 90%)")]
    NotANumber(String),
    #[error("--min-hosts {0}: at least 1 host must keep running (--tolerate-host-loss accepts losing any number)")]
    Zero(String),
    #[error("--min-hosts {0}: a percentage must be above 0% and at most 100%")]
    PercentRange(String),
    #[error("--min-hosts {0}: give a percentage with at most two decimals")]
    TooPrecise(String),
}

impl FromStr for MinHosts {
    type Err = MinHostsError;

    /// `N` (hosts, at least 1) or `P%` (above 0, at most 100, up to two decimals).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        let not_a_number = || MinHostsError::NotANumber(text.to_string());
        let Some(pct) = s.strip_suffix('%') else {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(not_a_number());
            }
            return match s.parse::<u32>() {
                Ok(0) => Err(MinHostsError::Zero(text.to_string())),
                Ok(n) => Ok(MinHosts::Hosts(n)),
                Err(_) => Err(not_a_number()),
            };
        };
        let (whole, frac) = pct
            .trim_end()
            .split_once('.')
            .unwrap_or((pct.trim_end(), ""));
        let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(frac) {
            return Err(not_a_number());
        }
        if frac.len() > 2 {
            return Err(MinHostsError::TooPrecise(text.to_string()));
        }
        let range = || MinHostsError::PercentRange(text.to_string());
        // Hundredths of a percent, in integers: 90% of 10 hosts is exactly 9.
        let whole: u64 = whole.parse().map_err(|_| range())?;
        let frac: u64 = format!("{frac:0<2}").parse().map_err(|_| not_a_number())?;
        let hundredths = whole.saturating_mul(100).saturating_add(frac);
        if hundredths == 0 || hundredths > 10_000 {
            return Err(range());
        }
        Ok(MinHosts::Percent(hundredths as u32))
    }
}

impl fmt::Display for MinHosts {
    /// `all`, `any`, `15` or `90%` (`87.5%`): the rule as `quorum.min_hosts` records it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MinHosts::Every => write!(f, "all"),
            MinHosts::Any => write!(f, "any"),
            MinHosts::Hosts(n) => write!(f, "{n}"),
            MinHosts::Percent(h) if h % 100 == 0 => write!(f, "{}%", h / 100),
            MinHosts::Percent(h) => {
                let frac = format!("{:02}", h % 100);
                write!(f, "{}.{}%", h / 100, frac.trim_end_matches('0'))
            }
        }
    }
}

impl MinHosts {
    /// The hosts that must keep running when `with_work` hosts had work: a percentage
    /// rounded up (90% of 16 is 15), every host for `Every`, none for `Any`.
    pub fn needed(self, with_work: u32) -> u32 {
        match self {
            MinHosts::Every => with_work,
            MinHosts::Any => 0,
            MinHosts::Hosts(n) => n,
            MinHosts::Percent(h) => (u64::from(h) * u64::from(with_work)).div_ceil(10_000) as u32,
        }
    }
}

/// Lost hosts named with the time each was lost, the first five, then how many more.
fn named(lost: &[&HostSummary]) -> String {
    const NAMED: usize = 5;
    let mut parts: Vec<String> = lost
        .iter()
        .take(NAMED)
        .map(|h| format!("{} at {:.1} s", h.host, h.lost_at_s.unwrap_or(0.0)))
        .collect();
    if lost.len() > NAMED {
        parts.push(format!("and {} more", lost.len() - NAMED));
    }
    parts.join(", ")
}

/// Judge a run by `rule` from its hosts (`RunResult::hosts`): the hosts with work are
/// those that ran workers (observers excluded); the run is valid when at least
/// `rule.needed(with_work)` of them were not lost. `Every` also holds a lost observer
/// against the run, as a lost host always made a run fail before quorums existed.
pub fn judge(hosts: &[HostSummary], rule: MinHosts) -> Validity {
    let loaded: Vec<&HostSummary> = hosts
        .iter()
        .filter(|h| !h.observer && h.workers > 0)
        .collect();
    let lost: Vec<&HostSummary> = loaded
        .iter()
        .copied()
        .filter(|h| h.lost_at_s.is_some())
        .collect();
    let with_work = loaded.len() as u32;
    let needed = rule.needed(with_work);
    let kept = with_work - lost.len() as u32;
    let mut reasons = Vec::new();
    match rule {
        MinHosts::Any => {}
        MinHosts::Every => {
            let all_lost: Vec<&HostSummary> =
                hosts.iter().filter(|h| h.lost_at_s.is_some()).collect();
            if !all_lost.is_empty() {
                reasons.push(format!(
                    "{} of {} hosts lost ({}); without --min-hosts every host must keep running \
                     (--min-hosts N|P% or --tolerate-host-loss accepts losses)",
                    all_lost.len(),
                    hosts.len(),
                    named(&all_lost)
                ));
            }
        }
        MinHosts::Hosts(_) | MinHosts::Percent(_) if needed > with_work => {
            reasons.push(format!(
                "--min-hosts {rule} needs {needed} hosts to keep running, but {with_work} had \
                 work in the run{}",
                match lost.is_empty() {
                    true => String::new(),
                    false => format!(" (lost: {})", named(&lost)),
                }
            ));
        }
        MinHosts::Hosts(_) | MinHosts::Percent(_) if kept < needed => {
            reasons.push(format!(
                "{} of {with_work} hosts lost ({}); --min-hosts {rule} needs {needed}",
                lost.len(),
                named(&lost)
            ));
        }
        MinHosts::Hosts(_) | MinHosts::Percent(_) => {}
    }
    Validity {
        valid: reasons.is_empty(),
        reasons,
        quorum: Some(Quorum {
            min_hosts: rule.to_string(),
            needed,
            with_work,
            lost: lost.len() as u32,
        }),
    }
}

/// The notice of a run that `rule` judged valid although hosts with work were lost: how
/// many, and the rule that accepts it (the fleet's own notices name each host). None
/// when nothing was lost or the run is invalid.
pub fn accepted_loss(v: &Validity, rule: MinHosts) -> Option<String> {
    let q = v.quorum.as_ref().filter(|q| v.valid && q.lost > 0)?;
    let why = match rule {
        MinHosts::Any => "--tolerate-host-loss accepts any loss".to_string(),
        MinHosts::Hosts(_) | MinHosts::Percent(_) => {
            format!("--min-hosts {rule} needs {}", q.needed)
        }
        MinHosts::Every => return None,
    };
    Some(format!(
        "{} of {} hosts lost; {why}: the run is valid",
        q.lost, q.with_work
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::OpSummary;

    fn host(name: &str, lost_at_s: Option<f64>) -> HostSummary {
        let none = OpSummary::from_ops(&crate::OpStats::default(), 1.0);
        HostSummary {
            host: name.into(),
            workers: 1,
            all: none.clone(),
            read: none.clone(),
            write: none,
            start_late_ms: None,
            lost_at_s,
            observer: false,
            straggler: false,
            cpu: None,
            memory: None,
            net: None,
            disk: None,
            storage: Vec::new(),
            scraped: Vec::new(),
            kubernetes: None,
        }
    }

    /// `n` hosts h1..hn, those in `lost` lost at their number in seconds.
    fn fleet(n: u32, lost: &[u32]) -> Vec<HostSummary> {
        (1..=n)
            .map(|i| host(&format!("h{i}"), lost.contains(&i).then_some(f64::from(i))))
            .collect()
    }

    fn parse(s: &str) -> MinHosts {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_percentage_is_of_the_hosts_with_work_rounded_up() {
        assert_eq!(parse("90%").needed(16), 15);
        assert_eq!(parse("100%").needed(3), 3);
        assert_eq!(parse("90%").needed(10), 9);
        assert_eq!(parse("75%").needed(4), 3);
        assert_eq!(parse("87.5%").needed(8), 7);
        assert_eq!(parse("0.01%").needed(16), 1);
        assert_eq!(parse("12").needed(16), 12);
        assert_eq!(MinHosts::Every.needed(7), 7);
        assert_eq!(MinHosts::Any.needed(7), 0);
    }

    #[test]
    fn the_rule_reads_back_as_given() {
        for s in ["90%", "87.5%", "0.25%", "100%", "15"] {
            assert_eq!(parse(s).to_string(), s);
        }
        assert_eq!(parse(" 90.50% ").to_string(), "90.5%");
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        for (s, why) in [
            ("0", "at least 1 host"),
            ("0%", "above 0% and at most 100%"),
            ("101%", "above 0% and at most 100%"),
            ("100.01%", "above 0% and at most 100%"),
            ("abc", "not a number"),
            ("", "not a number"),
            ("-1", "not a number"),
            ("%", "not a number"),
            ("5.5", "not a number"),
            ("1e3%", "not a number"),
            ("99999999999", "not a number"),
            ("90.125%", "two decimals"),
        ] {
            let e = s.parse::<MinHosts>().expect_err(s).to_string();
            assert!(e.starts_with(&format!("--min-hosts {s}:")), "{s}: {e}");
            assert!(e.contains(why), "{s}: {e}");
        }
    }

    #[test]
    fn a_run_at_its_quorum_is_valid_and_below_it_is_not() {
        let hosts = fleet(16, &[3, 7]);
        let v = judge(&hosts, parse("87.5%"));
        assert!(v.valid, "{v:?}");
        assert_eq!(
            v.quorum,
            Some(Quorum {
                min_hosts: "87.5%".into(),
                needed: 14,
                with_work: 16,
                lost: 2
            })
        );
        assert_eq!(
            accepted_loss(&v, parse("87.5%")).as_deref(),
            Some("2 of 16 hosts lost; --min-hosts 87.5% needs 14: the run is valid")
        );
        let v = judge(&hosts, parse("90%"));
        assert!(!v.valid);
        assert_eq!(
            v.reasons,
            ["2 of 16 hosts lost (h3 at 3.0 s, h7 at 7.0 s); --min-hosts 90% needs 15"]
        );
        assert_eq!(accepted_loss(&v, parse("90%")), None);
        // Without a flag every host counts; with --tolerate-host-loss none does.
        let v = judge(&hosts, MinHosts::Every);
        assert!(!v.valid);
        assert!(
            v.reasons[0]
                .starts_with("2 of 16 hosts lost (h3 at 3.0 s, h7 at 7.0 s); without --min-hosts"),
            "{v:?}"
        );
        let v = judge(&hosts, MinHosts::Any);
        assert!(v.valid && v.reasons.is_empty());
        assert_eq!(
            accepted_loss(&v, MinHosts::Any).as_deref(),
            Some("2 of 16 hosts lost; --tolerate-host-loss accepts any loss: the run is valid")
        );
        // A run that lost nothing is valid under every rule, and says nothing of losses.
        let whole = fleet(4, &[]);
        for rule in [MinHosts::Every, MinHosts::Any, parse("4"), parse("100%")] {
            let v = judge(&whole, rule);
            assert!(
                v.valid && accepted_loss(&v, rule).is_none(),
                "{rule}: {v:?}"
            );
        }
    }

    #[test]
    fn more_hosts_than_had_work_can_never_be_met() {
        let v = judge(&fleet(1, &[]), parse("2"));
        assert!(!v.valid);
        assert_eq!(
            v.reasons,
            ["--min-hosts 2 needs 2 hosts to keep running, but 1 had work in the run"]
        );
        let v = judge(&fleet(3, &[2]), parse("4"));
        assert!(
            v.reasons[0].ends_with("3 had work in the run (lost: h2 at 2.0 s)"),
            "{v:?}"
        );
    }

    #[test]
    fn observers_are_not_counted_but_every_host_means_every_host() {
        let mut hosts = fleet(4, &[4]);
        hosts[3].observer = true;
        hosts[3].workers = 0;
        let v = judge(&hosts, parse("100%"));
        assert!(v.valid, "{v:?}");
        assert_eq!(
            v.quorum.as_ref().map(|q| (q.with_work, q.lost)),
            Some((3, 0))
        );
        let v = judge(&hosts, MinHosts::Every);
        assert!(!v.valid);
        assert!(
            v.reasons[0].starts_with("1 of 4 hosts lost (h4 at 4.0 s)"),
            "{v:?}"
        );
    }

    #[test]
    fn many_lost_hosts_are_named_five_and_counted() {
        let v = judge(&fleet(10, &[1, 2, 3, 4, 5, 6, 7]), parse("50%"));
        assert_eq!(
            v.reasons,
            ["7 of 10 hosts lost (h1 at 1.0 s, h2 at 2.0 s, h3 at 3.0 s, h4 at 4.0 s, h5 at 5.0 s, and 2 more); --min-hosts 50% needs 5"]
        );
    }

    #[test]
    fn a_result_stored_before_validity_reads_as_valid() {
        let v: Validity = Default::default();
        assert!(v.valid && v.reasons.is_empty() && v.quorum.is_none());
    }
}
