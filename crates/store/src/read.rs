//! The read path: listing runs (with label and profile filters), resolving what the user
//! typed for a run (`latest`, a full id, a unique id prefix, or a unique name) and
//! deleting runs. Listing reads only per-interval totals, never histograms, so it stays
//! fast on large stores; full figures come from `Store::analyze`.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::write::{hostname, start_ticks};
use crate::{Store, StoreError};

/// A run's state as shown to users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being recorded by a live process.
    Running,
    Complete,
    /// Ran to its end, but one or more hosts were lost on the way: its figures cover
    /// part of the fleet for part of the time.
    #[serde(rename = "hosts-lost")]
    HostsLost,
    /// Stopped early (Ctrl-C) with a final result.
    Interrupted,
    /// The recording process died (SIGKILL, crash, power loss): only the intervals
    /// committed before that are there, and there is no final result.
    Incomplete,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::HostsLost => "hosts-lost",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Incomplete => "incomplete",
        }
    }
}

/// Identity and labels of a stored run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMeta {
    pub id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub profile: String,
    pub engine: String,
    pub started_at: String,
    pub status: RunStatus,
    /// Hosts lost during the run (from its final result, else from its intervals).
    pub hosts_lost: u32,
    /// False when the run fell below its quorum of hosts (its final result's
    /// `validity.valid`); true for a run without a final result or stored before runs
    /// were judged.
    pub valid: bool,
    /// Process recording the run (while `running`).
    #[serde(skip)]
    pub recorder_pid: Option<i64>,
    /// The process that recorded the run still runs on this machine: the same pid and
    /// the same start time (so a pid the kernel gave to another process since is not it).
    /// False for a run recorded on another machine (a shared store): we cannot tell.
    #[serde(skip)]
    pub recorder_alive: bool,
}

/// One line of `iofleet results list`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunListing {
    #[serde(flatten)]
    pub meta: RunMeta,
    /// Measured (non-warm-up) intervals stored.
    pub intervals: u32,
    /// Seconds measured, from the stored intervals.
    pub measured_s: f64,
    /// Fleet IOPS and MB/s over the stored measured intervals.
    pub iops: f64,
    pub mbps: f64,
}

/// Filters of `iofleet results list`; all must match.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    pub labels: Vec<(String, String)>,
    pub profile: Option<String>,
}

/// Status of a run as users see it: a complete run that lost hosts says so, and a run
/// whose row says `running` is running only if its recorder is alive.
fn effective_status(
    stored: &str,
    hosts_lost: u32,
    host: &str,
    pid: Option<i64>,
    ticks: Option<i64>,
) -> RunStatus {
    match stored {
        "complete" if hosts_lost > 0 => RunStatus::HostsLost,
        "complete" => RunStatus::Complete,
        "interrupted" => RunStatus::Interrupted,
        _ => {
            let Some(pid) = pid else {
                return RunStatus::Incomplete;
            };
            if host != hostname() {
                // Recorded on another machine (shared store): we cannot tell.
                return RunStatus::Running;
            }
            match start_ticks(pid) {
                Some(t) if Some(t) == ticks => RunStatus::Running,
                _ => RunStatus::Incomplete,
            }
        }
    }
}

/// The last but one column counts lost hosts: those with a loss time in the final
/// result, or (for a run without one) the most any stored interval was measured
/// without. The last is the final result's verdict (valid without one).
const META_COLUMNS: &str =
    "id, name, profile, engine, started_at, status, recorder_host, recorder_pid, recorder_start_ticks,
     max((SELECT count(*) FROM json_each(runs.result, '$.hosts')
           WHERE json_extract(value, '$.lost_at_s') IS NOT NULL),
         coalesce((SELECT max(hosts_lost) FROM intervals WHERE run_id = runs.id), 0)),
     coalesce(json_extract(runs.result, '$.validity.valid'), 1)";

impl Store {
    fn meta_from_row(&self, r: &rusqlite::Row<'_>) -> rusqlite::Result<RunMeta> {
        let status: String = r.get(5)?;
        let host: String = r.get(6)?;
        let pid: Option<i64> = r.get(7)?;
        let ticks: Option<i64> = r.get(8)?;
        let hosts_lost: u32 = r.get(9)?;
        let valid: bool = r.get(10)?;
        Ok(RunMeta {
            id: r.get(0)?,
            name: r.get(1)?,
            labels: BTreeMap::new(),
            profile: r.get(2)?,
            engine: r.get(3)?,
            started_at: r.get(4)?,
            status: effective_status(&status, hosts_lost, &host, pid, ticks),
            hosts_lost,
            valid,
            recorder_pid: pid,
            recorder_alive: host == hostname()
                && pid.is_some_and(|p| ticks.is_some() && start_ticks(p) == ticks),
        })
    }

    fn labels_of(&self, id: &str) -> Result<BTreeMap<String, String>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT key, value FROM labels WHERE run_id = ?1 ORDER BY key")?;
        let rows = st.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Identity, labels and state of one run (by full id).
    pub fn meta(&self, id: &str) -> Result<RunMeta, StoreError> {
        let mut meta = self
            .conn
            .query_row(
                &format!("SELECT {META_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                |r| self.meta_from_row(r),
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound { query: id.into() })?;
        meta.labels = self.labels_of(id)?;
        Ok(meta)
    }

    /// Runs matching `filter`, oldest first.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<RunListing>, StoreError> {
        let mut sql = format!("SELECT {META_COLUMNS} FROM runs WHERE 1");
        let mut args: Vec<String> = Vec::new();
        for (k, v) in &filter.labels {
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id AND l.key = ?{} AND l.value = ?{})",
                args.len() + 1,
                args.len() + 2
            ));
            args.push(k.clone());
            args.push(v.clone());
        }
        if let Some(p) = &filter.profile {
            sql.push_str(&format!(" AND profile = ?{}", args.len() + 1));
            args.push(p.clone());
        }
        sql.push_str(" ORDER BY rowid");
        let mut st = self.conn.prepare(&sql)?;
        let metas: Vec<RunMeta> = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                self.meta_from_row(r)
            })?
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(metas.len());
        let mut totals = self.conn.prepare_cached(
            "SELECT duration_s, ios, bytes FROM intervals WHERE run_id = ?1 AND warmup = 0",
        )?;
        for mut meta in metas {
            meta.labels = self.labels_of(&meta.id)?;
            let mut n = 0u32;
            let (mut ns, mut ios, mut bytes) = (0u64, 0u64, 0u64);
            let rows = totals.query_map([&meta.id], |r| {
                Ok((
                    r.get::<_, f64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (d, i, b) = row?;
                n += 1;
                ns += (d * 1e9).round() as u64;
                ios += i as u64;
                bytes += b as u64;
            }
            let secs = ns as f64 / 1e9;
            let rate = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
            out.push(RunListing {
                meta,
                intervals: n,
                measured_s: secs,
                iops: rate(ios),
                mbps: rate(bytes) / 1e6,
            });
        }
        Ok(out)
    }

    /// Resolve what the user typed for a run: `latest`, a full id, a unique prefix of an
    /// id, or the name of exactly one run.
    pub fn resolve(&self, query: &str) -> Result<String, StoreError> {
        let q = query.trim();
        if q.eq_ignore_ascii_case("latest") {
            return self
                .conn
                .query_row("SELECT id FROM runs ORDER BY rowid DESC LIMIT 1", [], |r| {
                    r.get(0)
                })
                .optional()?
                .ok_or(StoreError::Empty);
        }
        let lower = q.to_ascii_lowercase();
        if !lower.is_empty() && lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut st = self.conn.prepare_cached(
                "SELECT id FROM runs WHERE substr(id, 1, ?2) = ?1 ORDER BY rowid",
            )?;
            let ids: Vec<String> = st
                .query_map(params![lower, lower.len() as i64], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            match ids.len() {
                1 => return Ok(ids.into_iter().next().expect("one id")),
                0 => {}
                _ => {
                    return Err(StoreError::Ambiguous {
                        query: q.into(),
                        matches: ids,
                    })
                }
            }
        }
        let mut st = self
            .conn
            .prepare_cached("SELECT id FROM runs WHERE name = ?1 ORDER BY rowid")?;
        let ids: Vec<String> = st.query_map([q], |r| r.get(0))?.collect::<Result<_, _>>()?;
        match ids.len() {
            0 => Err(StoreError::NotFound { query: q.into() }),
            1 => Ok(ids.into_iter().next().expect("one id")),
            _ => Err(StoreError::Ambiguous {
                query: q.into(),
                matches: ids,
            }),
        }
    }

    /// Delete a run and everything stored with it. A run still being recorded by a live
    /// process is refused.
    pub fn delete(&mut self, id: &str) -> Result<(), StoreError> {
        let meta = self.meta(id)?;
        if meta.status == RunStatus::Running {
            return Err(StoreError::StillRunning {
                id: id.into(),
                pid: meta.recorder_pid.unwrap_or(0),
            });
        }
        self.write(|tx| crate::transfer::delete_run(tx, "main", id))
    }
}
