//! The best run per configuration (`iofleet compare --best`), as published reports give
//! it: a campaign searches some keys (queue depth, threads, disks, VMs) for each
//! configuration (namespaces, a storage policy, a test) and publishes the best result of
//! each configuration.
//!
//! A run's **configuration** is its values of the configuration keys: the labels named
//! (`compare --by` and `--configs`), then every key its sweep varied (its `vary` label),
//! except the keys searched over (`--best-over`). Among the runs of one configuration
//! the best is the one with the highest IOPS; ties go to the earliest. Only runs that
//! finished (complete, or complete with hosts lost) and are valid compete: a killed,
//! interrupted or invalid run is never the best. A `find-max` step competes only when it
//! is the step the search found (label `found=true`): its other steps are the closed-loop
//! maximum and rates that broke the SLO, whose higher IOPS the search rejected. This
//! module picks; the comparison
//! (`compare`) lays the picked runs out.

use std::collections::BTreeMap;

use crate::RunData;

/// The best run of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Best {
    /// Each configuration key with the configuration's value, in order.
    pub config: Vec<(String, String)>,
    /// Index of the best run among the runs given.
    pub run: usize,
    /// How many runs of the configuration competed.
    pub of: usize,
}

/// What picking needs of a run.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// Finished and valid: it may be the best.
    pub competes: bool,
    pub iops: f64,
}

impl<'a> Candidate<'a> {
    /// A stored run: it competes when it finished (complete, or complete with hosts
    /// lost) valid, with IOPS.
    pub fn of(r: &'a RunData) -> Candidate<'a> {
        Candidate {
            id: &r.id,
            name: &r.name,
            labels: &r.labels,
            competes: matches!(r.status.as_str(), "complete" | "hosts-lost")
                && r.result.validity.valid
                && r.result.summary.all.iops.is_finite()
                && search_allows(&r.labels),
            iops: r.result.summary.all.iops,
        }
    }

    /// The keys its sweep varied (label `vary`; none for other runs).
    fn varied(&self) -> Vec<String> {
        self.labels
            .get("vary")
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Its configuration: `fixed` then its varied keys, less those in `over`.
    fn configuration(
        &self,
        fixed: &[String],
        over: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        let mut keys: Vec<String> = fixed.to_vec();
        for k in self.varied() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.retain(|k| !over.contains(k));
        keys.into_iter()
            .map(|k| match self.labels.get(&k) {
                Some(v) => Ok((k, v.clone())),
                None => Err(format!(
                    "--best: run {} ({}) has no label '{k}', a key of its configuration",
                    self.id, self.name
                )),
            })
            .collect()
    }
}

/// A run a `find-max` measured (label `findmax`) may be the best only when it is the
/// step the search found (`found=true`); any other run may.
pub fn search_allows(labels: &BTreeMap<String, String>) -> bool {
    !labels.contains_key("findmax") || labels.get("found").is_some_and(|v| v == "true")
}

/// The best of `runs` per configuration, configurations in the order their first run
/// comes. `fixed` are the labels every configuration is told by (`--by`, `--configs`),
/// `over` the keys searched over (`--best-over`), each of which some run must carry.
pub fn best_per_configuration(
    runs: &[Candidate<'_>],
    fixed: &[String],
    over: &[String],
) -> Result<Vec<Best>, String> {
    if let Some(k) = over
        .iter()
        .find(|k| !runs.iter().any(|r| r.labels.contains_key(*k)))
    {
        return Err(format!(
            "--best-over {k}: none of the runs has a label '{k}' (a sweep labels each step with the keys it varies)"
        ));
    }
    if let Some(k) = over.iter().find(|k| fixed.contains(k)) {
        return Err(format!(
            "--best-over {k}: it is also --by or --configs, which tell configurations apart"
        ));
    }
    let mut out: Vec<Best> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let config = r.configuration(fixed, over)?;
        if !r.competes {
            continue;
        }
        match out.iter_mut().find(|b| b.config == config) {
            Some(b) => {
                b.of += 1;
                if r.iops > runs[b.run].iops {
                    b.run = i;
                }
            }
            None => out.push(Best {
                config,
                run: i,
                of: 1,
            }),
        }
    }
    if out.is_empty() {
        return Err(
            "--best: no run finished valid (killed, interrupted and invalid runs are never the best)"
                .into(),
        );
    }
    Ok(out)
}

/// `disks=2, qd=8` (or `(all runs)` for the one configuration of no key).
pub fn config_text(config: &[(String, String)]) -> String {
    if config.is_empty() {
        return "(all runs)".into();
    }
    config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run: its id, labels, IOPS and whether it competes.
    struct R(String, BTreeMap<String, String>, f64, bool);

    fn r(id: &str, labels: &[(&str, &str)], iops: f64) -> R {
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        R(id.into(), labels, iops, true)
    }

    fn candidates(runs: &[R]) -> Vec<Candidate<'_>> {
        runs.iter()
            .map(|r| Candidate {
                id: &r.0,
                name: &r.0,
                labels: &r.1,
                competes: r.3,
                iops: r.2,
            })
            .collect()
    }

    fn best(
        runs: &[R],
        fixed: &[&str],
        over: &[&str],
    ) -> Result<Vec<(String, String, usize)>, String> {
        let s = |v: &[&str]| v.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let b = best_per_configuration(&candidates(runs), &s(fixed), &s(over))?;
        Ok(b.iter()
            .map(|b| (config_text(&b.config), runs[b.run].0.clone(), b.of))
            .collect())
    }

    /// A 2 × 3 matrix (disks × qd) with the highest IOPS at qd 4 for 1 disk and at qd 2
    /// for 2 disks.
    fn matrix() -> Vec<R> {
        [
            ("1", "1", 100.0),
            ("1", "2", 150.0),
            ("1", "4", 180.0),
            ("2", "1", 200.0),
            ("2", "2", 390.0),
            ("2", "4", 380.0),
        ]
        .iter()
        .map(|(d, q, iops)| {
            r(
                &format!("d{d}q{q}"),
                &[("vary", "disks,qd"), ("disks", d), ("qd", q)],
                *iops,
            )
        })
        .collect()
    }

    fn row(c: &str, id: &str, of: usize) -> (String, String, usize) {
        (c.to_string(), id.to_string(), of)
    }

    #[test]
    fn the_best_of_each_configuration_is_its_highest_iops_run() {
        let runs = matrix();
        assert_eq!(
            best(&runs, &[], &["qd"]).unwrap(),
            [row("disks=1", "d1q4", 3), row("disks=2", "d2q2", 3)]
        );
        // Over both keys: one configuration, the best of all six.
        assert_eq!(
            best(&runs, &[], &["qd", "disks"]).unwrap(),
            [row("(all runs)", "d2q2", 6)]
        );
    }

    #[test]
    fn runs_that_do_not_compete_never_win() {
        let mut runs = matrix();
        runs[4].3 = false;
        runs[5].3 = false;
        assert_eq!(
            best(&runs, &[], &["qd"]).unwrap()[1],
            row("disks=2", "d2q1", 1)
        );
        for r in &mut runs {
            r.3 = false;
        }
        let e = best(&runs, &[], &["qd"]).unwrap_err();
        assert!(e.contains("no run finished valid"), "{e}");
    }

    /// Of a search's steps only the one it found competes: the closed-loop maximum and
    /// the rates past the SLO have more IOPS and are not what it found.
    #[test]
    fn a_search_competes_with_the_step_it_found() {
        let step = |id: &str, rate: &str, iops: f64, found: bool| {
            let mut l = vec![("findmax", "s"), ("rate", rate), ("pool", "a")];
            if found {
                l.push(("found", "true"));
            }
            let mut run = r(id, &l, iops);
            run.3 = search_allows(&run.1);
            run
        };
        let runs = vec![
            step("closed", "closed-loop", 900.0, false),
            step("r400", "400", 400.0, true),
            step("r800", "800", 780.0, false),
            r("plain", &[("pool", "b")], 50.0),
        ];
        assert_eq!(
            best(&runs, &["pool"], &[]).unwrap(),
            [row("pool=a", "r400", 1), row("pool=b", "plain", 1)]
        );
        assert!(!search_allows(
            &[("findmax".to_string(), "s".to_string())].into()
        ));
    }

    #[test]
    fn labels_named_tell_configurations_apart_and_bad_keys_are_named() {
        // Two sweeps over qd, labelled with the namespaces of their configuration.
        let runs: Vec<R> = [
            ("1", "1", 10.0),
            ("1", "2", 20.0),
            ("8", "1", 50.0),
            ("8", "2", 40.0),
        ]
        .iter()
        .map(|(ns, q, iops)| {
            r(
                &format!("n{ns}q{q}"),
                &[("vary", "qd"), ("qd", q), ("ns", ns), ("test", "t2")],
                *iops,
            )
        })
        .collect();
        assert_eq!(
            best(&runs, &["test", "ns"], &["qd"]).unwrap(),
            [
                row("test=t2, ns=1", "n1q2", 2),
                row("test=t2, ns=8", "n8q1", 2)
            ]
        );
        for (fixed, over, says) in [
            (
                &[][..],
                &["threads"][..],
                "--best-over threads: none of the runs",
            ),
            (&["pool"], &["qd"], "run n1q1 (n1q1) has no label 'pool'"),
            (
                &["qd"],
                &["qd"],
                "--best-over qd: it is also --by or --configs",
            ),
        ] {
            let e = best(&runs, fixed, over).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
