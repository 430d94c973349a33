//! Workloads written for other tools, read into iofleet's profile model: `fio` reads fio
//! job files into raw profiles (one worker group per job, with a notice for every
//! difference and an error for every option iofleet cannot run; docs/fio.md),
//! `diskspd` reads DISKSPD command lines into the profile of one worker (docs/diskspd.md),
//! `vdbench` reads vdbench parameter files into one profile per run step
//! (docs/vdbench.md), and
//! `trace` fits recorded I/O traces (blkparse, CSV, MSR-Cambridge) into plans that print
//! as profiles (docs/traces.md).
//!
//! This crate owns the foreign formats and the choices made in mapping them; the model
//! they map into (raw profiles, plans, units, the option table and its bounds) is
//! `iofleet-profile`'s, which knows nothing of fio or traces. `fio` reads the job file it
//! is named and the files that one includes, `trace` only the reader it is handed;
//! neither runs anything or knows engines, workers or results: the CLI finds the
//! inputs, applies what they ask of the run (an engine, direct I/O, a target) and prints.

#![forbid(unsafe_code)]

pub mod diskspd;
pub mod fio;
pub mod trace;
pub mod vdbench;
