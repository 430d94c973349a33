//! The results store as the binary uses it: `--db`, `--no-save`, `--name` and `--label`,
//! a run saved as it goes (`record`), and stored runs found and read back by id, name or
//! `latest` for the commands that show, compare and serve them (`stored`). The store
//! itself is the `iofleet_store` crate.

pub mod record;
pub mod stored;
