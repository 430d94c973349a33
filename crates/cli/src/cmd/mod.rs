//! The subcommands, one file each: its flags (a clap `Args` or `Subcommand`), the call
//! into the session or library that does the work, and what it prints. A command is
//! wiring: no command module imports another's; what two commands share lives in
//! `crate::run` (measuring), `crate::store` (stored runs), `crate::web` (listeners) or
//! `crate::args` (shared flags).

pub mod agent;
pub mod ceiling;
pub mod compare;
pub mod find_max;
pub mod hosts;
pub mod kube;
pub mod plan;
pub mod precondition;
pub mod profiles;
pub mod report;
pub mod results;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod verify;
pub mod vms;
