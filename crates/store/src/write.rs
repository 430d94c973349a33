//! The write path, used while a run happens: `begin_run` creates the run as `running`,
//! `record_interval` commits one interval (its row and every worker's per-disk,
//! per-stream raw counters and histograms) in one transaction, `record_usage` adds what each host spent
//! in it; a run with relays records what they sent of each interval with it
//! (`record_relayed_interval`) and, at the end, their totals (`record_relay_totals`)
//! and what lost relays had measured (`record_unsent_groups`); `finish_run` stores the final result and
//! marks the run `complete` or `interrupted`. Nothing is buffered across intervals, so a
//! killed process loses at most the interval it was writing.

use std::collections::BTreeMap;

use iofleet_stats::brief::HostBrief;
use iofleet_stats::result::{IntervalRow, RunInfo, RunResult};
use iofleet_stats::{HostUsage, OpStats, Sample};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, OptionalExtension, Transaction};

use crate::env::Environment;
use crate::{Store, StoreError};

/// What the caller knows about a run when it starts.
pub struct NewRun<'a> {
    /// `--name`; the profile name when absent.
    pub name: Option<&'a str>,
    /// `--label key=value` pairs.
    pub labels: &'a BTreeMap<String, String>,
    /// The run as it starts (resolved plan inside).
    pub info: &'a RunInfo,
    pub environment: &'a Environment,
}

/// This process's identity, so readers can tell a live recording from a dead one.
pub(crate) fn process_identity() -> (String, i64, Option<i64>) {
    let pid = std::process::id() as i64;
    (hostname(), pid, start_ticks(pid))
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Start time of a process in clock ticks since boot (/proc/PID/stat field 22); a
/// recycled pid has a different one.
pub(crate) fn start_ticks(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields resume after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    // A killed process that is not reaped yet is a zombie: it records nothing more.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

fn to_i64(what: &str, v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Overflow(format!("{what} = {v}")))
}

fn hist_blob(s: &OpStats) -> Option<Vec<u8>> {
    (!s.hist.is_empty()).then(|| s.hist.to_v2_bytes())
}

/// What relays sent of one interval for the hosts below them (`--relay-fanout`): per
/// group (the run's order) the merged sample of their workers, and per host below a
/// relay its brief (`brief.host` indexes `host_names`). Empty in a run without relays.
#[derive(Default)]
pub struct Relayed<'a> {
    pub groups: &'a [Sample],
    pub hosts: &'a [HostBrief],
    pub host_names: &'a [String],
}

/// The counter and histogram columns of a stream's figures, in table order.
pub(crate) const OPS_COLUMNS: &str =
    "read_ios, read_bytes, read_errors, read_lat_sum_ns, read_lat_sq_sum_ns2, read_hist, \
     write_ios, write_bytes, write_errors, write_lat_sum_ns, write_lat_sq_sum_ns2, write_hist";

/// One direction's values for `OPS_COLUMNS` (`dir`: "read" or "write").
fn op_values(dir: &str, o: &OpStats) -> Result<[Value; 6], StoreError> {
    let count = |field: &str, v: u64| {
        i64::try_from(v).map_err(|_| StoreError::Overflow(format!("{dir} {field} = {v}")))
    };
    Ok([
        count("ios", o.ios)?.into(),
        count("bytes", o.bytes)?.into(),
        count("errors", o.errors)?.into(),
        o.latency_sum_ns.to_le_bytes().to_vec().into(),
        o.latency_sq_sum_ns2.to_le_bytes().to_vec().into(),
        hist_blob(o).map_or(Value::Null, Value::Blob),
    ])
}

/// Insert (or replace) a sample's streams into `table`, one row per stream that did
/// anything (absent rows read back as zero): `run_id` and the `keys` columns take `key`.
fn insert_streams<const N: usize>(
    tx: &Transaction<'_>,
    table: &str,
    keys: &str,
    key: [Value; N],
    sample: &Sample,
) -> Result<(), StoreError> {
    let slots: Vec<String> = (1..=N + 13).map(|i| format!("?{i}")).collect();
    let mut ins = tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO {table} (run_id, {keys}, stream, {OPS_COLUMNS}) VALUES ({})",
        slots.join(", ")
    ))?;
    for (s, st) in sample.streams.iter().enumerate() {
        let (r, w) = (&st.read, &st.write);
        if r.ios + r.errors + w.ios + w.errors == 0 {
            continue;
        }
        let values = key
            .iter()
            .cloned()
            .chain([Value::from(s as i64)])
            .chain(op_values("read", r)?)
            .chain(op_values("write", w)?);
        ins.execute(params_from_iter(values))?;
    }
    Ok(())
}

impl Store {
    /// Create a run in state `running`; returns its short id (8 hex digits).
    pub fn begin_run(&mut self, new: &NewRun<'_>) -> Result<String, StoreError> {
        self.begin_run_as(new, None)
    }

    /// `begin_run` under a given id (a run that moved to memory and could not bring its
    /// first rows along keeps its id), else a fresh one.
    pub fn begin_run_as(
        &mut self,
        new: &NewRun<'_>,
        given: Option<&str>,
    ) -> Result<String, StoreError> {
        let info_json = serde_json::to_string(new.info)?;
        let env_json = serde_json::to_string(new.environment)?;
        let (host, pid, ticks) = process_identity();
        let name = new.name.unwrap_or(&new.info.profile);
        let workers = new.info.plan.plan.fleet.workers;
        self.write(|tx| {
            let mut id;
            loop {
                id = given.map_or_else(|| format!("{:08x}", rand::random::<u32>()), str::to_string);
                if given.is_some() {
                    break;
                }
                let taken: Option<i64> = tx
                    .query_row("SELECT 1 FROM runs WHERE id = ?1", [&id], |r| r.get(0))
                    .optional()?;
                if taken.is_none() {
                    break;
                }
            }
            tx.execute(
                "INSERT INTO runs (id, name, profile, engine, started_at, status, info, environment,
                                   recorder_host, recorder_pid, recorder_start_ticks)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8, ?9, ?10)",
                params![
                    id,
                    name,
                    new.info.profile,
                    new.info.engine,
                    new.info.started_at,
                    info_json,
                    env_json,
                    host,
                    pid,
                    ticks
                ],
            )?;
            for (k, v) in new.labels {
                tx.execute(
                    "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![id, k, v],
                )?;
            }
            for w in 0..workers {
                tx.execute(
                    "INSERT INTO run_workers (run_id, worker, host) VALUES (?1, ?2, ?3)",
                    params![id, w as i64, new.info.hostname],
                )?;
            }
            Ok(id)
        })
    }

    /// Commit one finished interval: its row and, per worker (local index), each of its
    /// disks' per-stream counters. Recording an interval again replaces it (a run that
    /// moved to memory between this and its usage records the interval once more).
    pub fn record_interval(
        &mut self,
        id: &str,
        row: &IntervalRow,
        disks: &[Vec<Sample>],
    ) -> Result<(), StoreError> {
        self.record_relayed_interval(id, row, disks, &Relayed::default())
    }

    /// `record_interval` of a run with relays: with the interval, in the same
    /// transaction, what the relays sent of it (`relayed`).
    pub fn record_relayed_interval(
        &mut self,
        id: &str,
        row: &IntervalRow,
        disks: &[Vec<Sample>],
        relayed: &Relayed<'_>,
    ) -> Result<(), StoreError> {
        let mut fleet = Sample::default();
        disks.iter().flatten().for_each(|d| fleet += d);
        relayed.groups.iter().for_each(|g| fleet += g);
        let all = fleet.all();
        let mut briefs = Vec::with_capacity(relayed.hosts.len());
        for b in relayed.hosts {
            if let Some(name) = relayed.host_names.get(b.host as usize) {
                briefs.push((name, serde_json::to_string(b)?));
            }
        }
        self.write(|tx| {
            tx.execute(
                "INSERT OR REPLACE INTO intervals (run_id, idx, t_s, duration_s, warmup, ios, bytes, errors, hosts_lost)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    id,
                    row.index,
                    row.t_s,
                    row.duration_s,
                    row.warmup,
                    to_i64("ios", all.ios)?,
                    to_i64("bytes", all.bytes)?,
                    to_i64("errors", all.errors)?,
                    row.hosts_lost
                ],
            )?;
            for (w, ds) in disks.iter().enumerate() {
                for (d, sample) in ds.iter().enumerate() {
                    let key = [Value::Text(id.into()), row.index.into(), (w as i64).into(), (d as i64).into()];
                    insert_streams(tx, "disk_samples", "idx, worker, disk", key, sample)?;
                }
            }
            for (g, sample) in relayed.groups.iter().enumerate() {
                let key = [Value::Text(id.into()), row.index.into(), (g as i64).into()];
                insert_streams(tx, "relayed_samples", "idx, grp", key, sample)?;
            }
            let mut ins = tx.prepare_cached(
                "INSERT OR REPLACE INTO relayed_hosts (run_id, idx, host, brief) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (name, brief) in &briefs {
                ins.execute(params![id, row.index, name, brief])?;
            }
            Ok(())
        })
    }

    /// Commit one relay's totals of the (worker, disk)s below it over the measured
    /// intervals, with global worker numbers (`worker_base`: the run's first), as one
    /// more batch: with the intervals they make every worker's total.
    pub fn record_relay_totals(
        &mut self,
        id: &str,
        worker_base: u32,
        totals: &[(u32, u32, Sample)],
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            let batch: i64 = tx.query_row(
                "SELECT COALESCE(MAX(batch) + 1, 0) FROM relay_totals WHERE run_id = ?1",
                [id],
                |r| r.get(0),
            )?;
            for (worker, disk, sample) in totals {
                let Some(local) = worker.checked_sub(worker_base) else {
                    continue; // not a worker of this run (the live run ignores it too)
                };
                let key = [
                    Value::Text(id.into()),
                    batch.into(),
                    local.into(),
                    (*disk).into(),
                ];
                insert_streams(tx, "relay_totals", "batch, worker, disk", key, sample)?;
            }
            Ok(())
        })
    }

    /// Commit, per group (the run's order), what relays lost before their totals came
    /// had measured: the fleet's and the groups' totals count it (`fold_with`).
    pub fn record_unsent_groups(&mut self, id: &str, groups: &[Sample]) -> Result<(), StoreError> {
        self.write(|tx| {
            for (g, sample) in groups.iter().enumerate() {
                let key = [Value::Text(id.into()), (g as i64).into()];
                insert_streams(tx, "unsent_groups", "grp", key, sample)?;
            }
            Ok(())
        })
    }

    /// Commit what each host spent during interval `idx` (hosts that did not report
    /// are left out). Kept apart from `record_interval`: usage is an extra the report
    /// draws, never an input to the recomputed figures.
    pub fn record_usage(
        &mut self,
        id: &str,
        idx: u32,
        hosts: &[String],
        usage: &[Option<HostUsage>],
    ) -> Result<(), StoreError> {
        self.write(|tx| {
        {
            let mut ins = tx.prepare_cached(
                "INSERT OR REPLACE INTO host_usage (run_id, idx, host, usage) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (host, u) in hosts.iter().zip(usage) {
                if let Some(u) = u {
                    ins.execute(params![id, idx, host, serde_json::to_string(u)?])?;
                }
            }
        }
        Ok(())
        })
    }

    /// Store the final result and mark the run `complete` (or `interrupted`).
    pub fn finish_run(&mut self, id: &str, result: &RunResult) -> Result<(), StoreError> {
        let json = serde_json::to_string(result)?;
        let status = if result.run.interrupted {
            "interrupted"
        } else {
            "complete"
        };
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET status = ?2, result = ?3 WHERE id = ?1",
                params![id, status, json],
            )?;
            for w in &result.workers {
                tx.execute(
                    "INSERT INTO run_workers (run_id, worker, host) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id, worker) DO UPDATE SET host = excluded.host",
                    params![id, w.worker, w.host],
                )?;
            }
            Ok(())
        })
    }

    /// Record which host each worker runs on (known once the fleet is placed), so a run
    /// killed before its final result still attributes workers to hosts.
    pub fn set_worker_hosts(
        &mut self,
        id: &str,
        hosts: &[String],
        worker_host: &[usize],
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            for (w, &h) in worker_host.iter().enumerate() {
                let Some(host) = hosts.get(h) else { continue };
                tx.execute(
                    "INSERT INTO run_workers (run_id, worker, host) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id, worker) DO UPDATE SET host = excluded.host",
                    params![id, w as i64, host],
                )?;
            }
            Ok(())
        })
    }

    /// Set (or replace) one label of a stored run, e.g. the `found` mark `find-max`
    /// puts on its answer once the search has ended.
    pub fn set_label(&mut self, id: &str, key: &str, value: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT(run_id, key) DO UPDATE SET value = excluded.value",
                params![id, key, value],
            )?;
            Ok(())
        })
    }

    /// Mark a run that ended without a result (the run failed) as interrupted.
    pub fn abandon_run(&mut self, id: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                [id],
            )?;
            Ok(())
        })
    }

    /// Record a run that ended before the fleet was released (e.g. interrupted while
    /// preparing disks): it has a result but no intervals.
    pub fn record_finished(
        &mut self,
        new: &NewRun<'_>,
        result: &RunResult,
    ) -> Result<String, StoreError> {
        let id = self.begin_run(new)?;
        self.finish_run(&id, result)?;
        Ok(id)
    }
}
