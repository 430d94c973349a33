//! The measuring session behind every command that runs a workload: the arguments
//! resolved into worker groups and run settings, the command's fleet and live outputs
//! (opened once, closed when the command ends), each measurement with the results store
//! and the terminal line around it, steady-state rounds, fio job phases, the find-max
//! search, and what a run prints (its plan with `--dry-run`, else its result). It does
//! not parse a command line (`crate::cmd`) nor serve HTTP (`crate::web`); it uses the
//! listeners and the results store (`crate::store`), which do not use it.

pub mod campaign;
pub mod diskspd;
pub mod dry_run;
pub mod file_steps;
pub mod find_max;
pub mod fio_job;
pub mod fio_phases;
pub mod fleet_size;
pub mod iometer;
pub mod join;
pub mod live;
pub mod measure;
pub mod output;
pub mod resolve;
pub mod search;
pub mod session;
pub mod steady;
pub mod stepping;
pub mod vdbench;
