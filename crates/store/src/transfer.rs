//! Moving whole runs between stores: the copy a run keeps in memory when its store
//! cannot be written (`pull_run`, `push_run`), that copy saved to a private file
//! (`save_to`, `save_aside`), and `iofleet results import FILE` putting such a file — or
//! any other store of this schema version — back (`import`). A run moves with every row it owns (the run, its labels,
//! workers, intervals, samples, host usage and, for a relayed run, what the relays sent) in one transaction, so a reader never sees
//! half of one. Nothing here interprets a run's figures.

use std::path::Path;

use rusqlite::{params, OptionalExtension, Transaction};

use crate::schema::LATEST_VERSION;
use crate::{Store, StoreError};

/// Tables holding a run's rows, parents first, and the column naming the run.
const RUN_TABLES: &[(&str, &str)] = &[
    ("runs", "id"),
    ("labels", "run_id"),
    ("run_workers", "run_id"),
    ("intervals", "run_id"),
    ("samples", "run_id"),
    ("disk_samples", "run_id"),
    ("host_usage", "run_id"),
    ("relayed_samples", "run_id"),
    ("relayed_hosts", "run_id"),
    ("relay_totals", "run_id"),
    ("unsent_groups", "run_id"),
];

/// What `import` did with each run of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// Copied in (`replaced`: over a partial record of the same run).
    Added { id: String, replaced: bool },
    /// Already there, identical.
    Unchanged { id: String },
}

/// Delete run `id` and every row it owns from the database attached as `schema`.
pub(crate) fn delete_run(tx: &Transaction<'_>, schema: &str, id: &str) -> Result<(), StoreError> {
    for (table, col) in RUN_TABLES.iter().rev() {
        tx.execute(
            &format!("DELETE FROM {schema}.{table} WHERE {col} = ?1"),
            [id],
        )?;
    }
    Ok(())
}

/// Copy run `id` from `from` to `to` (attached schema names), replacing what `to` had of
/// it. Both are at this build's schema version, so their columns line up.
fn copy_run(tx: &Transaction<'_>, from: &str, to: &str, id: &str) -> Result<(), StoreError> {
    delete_run(tx, to, id)?;
    for (table, col) in RUN_TABLES {
        tx.execute(
            &format!("INSERT INTO {to}.{table} SELECT * FROM {from}.{table} WHERE {col} = ?1"),
            [id],
        )?;
    }
    Ok(())
}

/// A fingerprint of what a store holds of run `id`: status, final result and interval
/// count, enough to tell a partial record from a complete one and two copies apart.
fn state(
    tx: &Transaction<'_>,
    schema: &str,
    id: &str,
) -> Result<Option<(String, Option<String>, i64)>, StoreError> {
    let row = tx
        .query_row(
            &format!(
                "SELECT status, result, (SELECT COUNT(*) FROM {schema}.intervals WHERE run_id = ?1)
                 FROM {schema}.runs WHERE id = ?1"
            ),
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(row)
}

impl Store {
    fn attach(&self, file: &Path, name: &str) -> Result<(), StoreError> {
        let file = file.to_str().ok_or_else(|| StoreError::NotAStore {
            path: file.to_path_buf(),
            detail: "the path is not UTF-8".into(),
        })?;
        self.conn
            .execute(&format!("ATTACH DATABASE ?1 AS {name}"), params![file])?;
        Ok(())
    }

    fn detach(&self, name: &str) {
        let _ = self.conn.execute(&format!("DETACH DATABASE {name}"), []);
    }

    /// Copy run `id` from the store file `file` into this one (used by a run that
    /// switched to memory: what it had committed before the switch).
    pub fn pull_run(&mut self, file: &Path, id: &str) -> Result<(), StoreError> {
        self.attach(file, "src")?;
        let r = self.write(|tx| copy_run(tx, "src", "main", id));
        self.detach("src");
        r
    }

    /// Copy run `id` from this store into the store file `file`, replacing its partial
    /// record there (a run kept in memory going back to its store).
    pub fn push_run(&mut self, file: &Path, id: &str) -> Result<(), StoreError> {
        self.attach(file, "dst")?;
        let r = self.write(|tx| copy_run(tx, "main", "dst", id));
        self.detach("dst");
        r.map_err(|e| crate::explain_write_at(file, e))
    }

    /// Write the whole store to a new file `file`, which must not exist: it is created
    /// private (0600) with `O_EXCL`, so a file or link already there is never followed
    /// or overwritten.
    pub fn save_to(&self, file: &Path) -> Result<(), StoreError> {
        crate::place::private_file(file).map_err(|e| StoreError::Unusable {
            path: file.to_path_buf(),
            why: format!("cannot create it: {e}"),
        })?;
        self.vacuum_into(file)
    }

    /// Write the whole store into `file`, an empty file made beforehand.
    fn vacuum_into(&self, file: &Path) -> Result<(), StoreError> {
        let name = file.to_str().ok_or_else(|| StoreError::NotAStore {
            path: file.to_path_buf(),
            detail: "the path is not UTF-8".into(),
        })?;
        self.conn.execute("VACUUM INTO ?1", params![name])?;
        Ok(())
    }

    /// Save this store (a run `id` kept in memory because its store `store` failed) to a
    /// file of its own, in the first private place that takes it (`spill_dirs`): a
    /// directory only this user can enter, a new file made with `O_EXCL`. Returns the
    /// file, or what each place said.
    pub fn save_aside(&self, store: &Path, id: &str) -> Result<std::path::PathBuf, Vec<String>> {
        crate::place::spill(&crate::place::spill_dirs(store), id, |f| {
            self.vacuum_into(f)
                .map_err(|e| crate::explain_write_at(f, e))
        })
    }

    /// `iofleet results import FILE`: every run of the store file `file` into this one,
    /// one transaction per run. A run already here is replaced when this store holds only
    /// a partial record of it (still `running` or `interrupted` with fewer intervals,
    /// e.g. what a run wrote before its store failed), left alone when identical, and
    /// refused otherwise. Nothing is written when the file is not a store of this
    /// schema version.
    pub fn import(&mut self, file: &Path) -> Result<Vec<Imported>, StoreError> {
        let not_store = |detail: String| StoreError::NotAStore {
            path: file.to_path_buf(),
            detail,
        };
        if !file.is_file() {
            return Err(not_store("no such file".into()));
        }
        self.attach(file, "src")
            .map_err(|e| not_store(e.to_string()))?;
        let r = self.import_attached(file);
        self.detach("src");
        r
    }

    fn import_attached(&mut self, file: &Path) -> Result<Vec<Imported>, StoreError> {
        let not_store = |detail: String| StoreError::NotAStore {
            path: file.to_path_buf(),
            detail,
        };
        let version: u32 = self
            .conn
            .query_row("PRAGMA src.user_version", [], |r| r.get(0))
            .map_err(|e| not_store(e.to_string()))?;
        let has_runs: bool = self
            .conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM src.sqlite_master WHERE type = 'table' AND name = 'runs'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| not_store(e.to_string()))?;
        if version == 0 || !has_runs {
            return Err(not_store("it has no iofleet runs table".into()));
        }
        if version != LATEST_VERSION {
            return Err(StoreError::OtherVersion {
                path: file.to_path_buf(),
                found: version,
                supported: LATEST_VERSION,
            });
        }
        let ids: Vec<String> = {
            let mut st = self
                .conn
                .prepare("SELECT id FROM src.runs ORDER BY started_at, id")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut out = Vec::new();
        for id in ids {
            let done = self.write(|tx| {
                let theirs = state(tx, "src", &id)?;
                let ours = state(tx, "main", &id)?;
                match (ours, theirs) {
                    (None, _) => {
                        copy_run(tx, "src", "main", &id)?;
                        Ok(Imported::Added {
                            id: id.clone(),
                            replaced: false,
                        })
                    }
                    (Some(a), Some(b)) if a == b => Ok(Imported::Unchanged { id: id.clone() }),
                    (Some((status, result, n)), Some((_, _, m)))
                        if result.is_none()
                            && (status == "running" || status == "interrupted")
                            && n <= m =>
                    {
                        copy_run(tx, "src", "main", &id)?;
                        Ok(Imported::Added {
                            id: id.clone(),
                            replaced: true,
                        })
                    }
                    (Some((status, _, _)), _) => Err(StoreError::Conflict {
                        id: id.clone(),
                        status,
                    }),
                }
            })?;
            out.push(done);
        }
        Ok(out)
    }
}
