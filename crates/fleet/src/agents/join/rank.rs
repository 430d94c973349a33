//! An agent's rank and the fleet's size, from what its launcher set. No MPI library is
//! involved: `mpirun`, `srun` or a Kubernetes Job is only the process starter, and each
//! says who a process is in its own variables. The first that is set decides, in this
//! order: `--rank` (with `IOFLEET_SIZE`), `IOFLEET_RANK`/`IOFLEET_SIZE`, Open MPI's
//! `OMPI_COMM_WORLD_RANK`/`OMPI_COMM_WORLD_SIZE`, PMIx's `PMIX_RANK` (size from Open
//! MPI's variable when set), MPICH's `PMI_RANK`/`PMI_SIZE`, Slurm's
//! `SLURM_PROCID`/`SLURM_NTASKS`, a Kubernetes indexed Job's `JOB_COMPLETION_INDEX`,
//! then a StatefulSet pod's ordinal (the number ending its host name, in a pod). With
//! none, the controller gives the agent the lowest free rank.

/// Where a launcher placed this agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub rank: Option<u32>,
    pub size: Option<u32>,
    /// The variable (or flag) the rank came from; "none" when the controller chooses.
    pub from: String,
}

/// (rank variable, size variable) in the order they are asked.
const LAUNCHERS: [(&str, Option<&str>); 6] = [
    ("IOFLEET_RANK", Some("IOFLEET_SIZE")),
    ("OMPI_COMM_WORLD_RANK", Some("OMPI_COMM_WORLD_SIZE")),
    ("PMIX_RANK", Some("OMPI_COMM_WORLD_SIZE")),
    ("PMI_RANK", Some("PMI_SIZE")),
    ("SLURM_PROCID", Some("SLURM_NTASKS")),
    ("JOB_COMPLETION_INDEX", None),
];

fn number(var: &str, value: &str) -> Result<u32, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{var}={value:?} is not a rank or size (a whole number)"))
}

/// The placement `env` says (`env` reads a variable), `rank` (from `--rank`) first.
pub fn placement(
    rank: Option<u32>,
    env: impl Fn(&str) -> Option<String>,
    hostname: &str,
) -> Result<Placement, String> {
    let size = |var: Option<&str>| -> Result<Option<u32>, String> {
        match var.and_then(|v| env(v).map(|x| (v, x))) {
            Some((v, x)) => number(v, &x).map(Some),
            None => Ok(None),
        }
    };
    if let Some(r) = rank {
        return Ok(Placement {
            rank: Some(r),
            size: size(Some("IOFLEET_SIZE"))?,
            from: "--rank".into(),
        });
    }
    for (var, size_var) in LAUNCHERS {
        if let Some(v) = env(var) {
            return Ok(Placement {
                rank: Some(number(var, &v)?),
                size: size(size_var)?,
                from: var.into(),
            });
        }
    }
    // A StatefulSet's pod is NAME-ORDINAL, and Kubernetes sets KUBERNETES_SERVICE_HOST
    // in every pod.
    if env("KUBERNETES_SERVICE_HOST").is_some() {
        if let Some(ord) = hostname
            .rsplit_once('-')
            .and_then(|(_, n)| n.parse::<u32>().ok())
        {
            return Ok(Placement {
                rank: Some(ord),
                size: None,
                from: "the StatefulSet ordinal in the host name".into(),
            });
        }
    }
    Ok(Placement {
        rank: None,
        size: None,
        from: "none".into(),
    })
}

impl Placement {
    /// The placements of `n` agents one process runs (`iofleet agent --agents N`):
    /// process rank r of a launcher's s holds agent ranks r·n … r·n+n−1 of a fleet of
    /// s·n, so a launcher that starts s processes of n agents each gives every agent its
    /// own rank. Without a rank the controller chooses each. None when the ranks would
    /// not fit in 32 bits.
    pub fn split(&self, n: u32) -> Option<Vec<Placement>> {
        if n == 1 {
            return Some(vec![self.clone()]);
        }
        let size = match self.size {
            Some(s) => Some(s.checked_mul(n)?),
            None => None,
        };
        let base = match self.rank {
            Some(r) => {
                let first = r.checked_mul(n)?;
                first.checked_add(n - 1)?; // the last agent's rank fits too
                Some(first)
            }
            None => None,
        };
        Some(
            (0..n)
                .map(|k| Placement {
                    rank: base.map(|b| b + k),
                    size,
                    from: format!("{} × --agents {n}", self.from),
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn each_launcher_says_rank_and_size_in_its_own_variables() {
        for (vars, rank, size, from) in [
            (
                vec![
                    ("OMPI_COMM_WORLD_RANK", "3"),
                    ("OMPI_COMM_WORLD_SIZE", "16"),
                ],
                3,
                Some(16),
                "OMPI_COMM_WORLD_RANK",
            ),
            (vec![("PMIX_RANK", "5")], 5, None, "PMIX_RANK"),
            (
                vec![("PMI_RANK", "2"), ("PMI_SIZE", "4")],
                2,
                Some(4),
                "PMI_RANK",
            ),
            (
                vec![("SLURM_PROCID", "7"), ("SLURM_NTASKS", "8")],
                7,
                Some(8),
                "SLURM_PROCID",
            ),
            (
                vec![("JOB_COMPLETION_INDEX", "11")],
                11,
                None,
                "JOB_COMPLETION_INDEX",
            ),
            (
                vec![
                    ("IOFLEET_RANK", "1"),
                    ("IOFLEET_SIZE", "2"),
                    ("OMPI_COMM_WORLD_RANK", "9"),
                ],
                1,
                Some(2),
                "IOFLEET_RANK",
            ),
        ] {
            let p = placement(None, env(&vars), "node1").unwrap();
            assert_eq!(
                (p.rank, p.size, p.from.as_str()),
                (Some(rank), size, from),
                "{vars:?}"
            );
        }
    }

    #[test]
    fn the_flag_comes_first_and_a_pod_falls_back_to_its_ordinal() {
        let p = placement(Some(4), env(&[("OMPI_COMM_WORLD_RANK", "9")]), "h").unwrap();
        assert_eq!((p.rank, p.from.as_str()), (Some(4), "--rank"));
        let pod = env(&[("KUBERNETES_SERVICE_HOST", "10.0.0.1")]);
        assert_eq!(placement(None, &pod, "iofleet-12").unwrap().rank, Some(12));
        assert_eq!(placement(None, &pod, "iofleet").unwrap().rank, None);
        // Outside a pod a host name's number is no rank.
        assert_eq!(placement(None, env(&[]), "node-3").unwrap().rank, None);
    }

    #[test]
    fn agents_of_one_process_take_consecutive_ranks_of_the_whole_fleet() {
        let p = placement(
            None,
            env(&[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "4")]),
            "h",
        )
        .unwrap();
        let agents = p.split(3).unwrap();
        let ranks: Vec<_> = agents.iter().map(|a| a.rank.unwrap()).collect();
        assert_eq!(ranks, [6, 7, 8]);
        assert!(agents.iter().all(|a| a.size == Some(12)));
        assert_eq!(agents[0].from, "OMPI_COMM_WORLD_RANK × --agents 3");
        // Every process's agents together: each rank of the fleet exactly once.
        let mut all: Vec<u32> = (0..4)
            .flat_map(|r| {
                Placement {
                    rank: Some(r),
                    size: Some(4),
                    from: "x".into(),
                }
                .split(3)
                .unwrap()
                .into_iter()
                .map(|a| a.rank.unwrap())
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..12).collect::<Vec<_>>());
        // No rank: the controller chooses each; one agent: the placement as it was.
        let none = placement(None, env(&[]), "h").unwrap();
        assert!(none.split(5).unwrap().iter().all(|a| a.rank.is_none()));
        assert_eq!(p.split(1).unwrap(), vec![p.clone()]);
        // Ranks past 32 bits are refused, not wrapped.
        let big = Placement {
            rank: Some(u32::MAX / 2),
            size: None,
            from: "x".into(),
        };
        assert!(big.split(4).is_none());
    }

    #[test]
    fn a_variable_that_is_no_number_is_named() {
        let e = placement(None, env(&[("SLURM_PROCID", "x")]), "h").unwrap_err();
        assert!(e.contains("SLURM_PROCID=\"x\""), "{e}");
        let e = placement(None, env(&[("PMI_RANK", "1"), ("PMI_SIZE", "-2")]), "h").unwrap_err();
        assert!(e.contains("PMI_SIZE"), "{e}");
    }
}
