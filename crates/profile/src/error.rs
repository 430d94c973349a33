//! The one error type of the profile crate.
//!
//! Every variant that concerns a value names the TOML key that fixes it in dotted form
//! (`fleet.qd`, `stream[1] ("log").read_pct`) and, when the value came from a command-line
//! override, the flag as well (`--qd (fleet.qd): ...`). Building those names is the job of
//! `validate`; this module only stores and prints them.

use thiserror::Error;

/// Why a profile could not be loaded or resolved.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// The file is not valid TOML or does not have the profile's shape (unknown key,
    /// wrong type). `key` is the dotted key at the error position when it could be found.
    #[error("{origin}: {}{message}", key_prefix(.key))]
    Parse {
        origin: String,
        key: Option<String>,
        message: String,
    },
    /// A profile file could not be read.
    #[error("cannot read profile {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `load_builtin` got a name that is not a built-in profile; `nearest` is the
    /// built-in name it most resembles, when one is close enough to be a typo.
    #[error(
        "unknown profile '{name}'{}; built-in profiles are: {}; or give a path to a .toml file",
        .nearest.map(|n| format!(" (did you mean '{n}'?)")).unwrap_or_default(),
        .valid.join(", ")
    )]
    UnknownProfile {
        name: String,
        nearest: Option<&'static str>,
        valid: Vec<&'static str>,
    },
    /// A value is missing, malformed, out of range or inconsistent with another.
    #[error("{origin}: {}: {message}", subject(.key, .flag))]
    Invalid {
        /// File path or `built-in NAME`.
        origin: String,
        /// Dotted TOML key, e.g. `stream[0] ("data").read_pct`.
        key: String,
        /// The CLI flag when the offending value came from an override, e.g. `--read-pct`.
        flag: Option<&'static str>,
        message: String,
    },
    /// The fleet as a whole passes a bound (its workers, streams or bytes added up over
    /// its groups): `key` is the one to lower, `flag` its command-line flag.
    #[error("{}: {message}", subject(.key, .flag))]
    Total {
        key: String,
        flag: Option<&'static str>,
        message: String,
    },
}

impl ProfileError {
    /// The dotted TOML key the error is about, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ProfileError::Parse { key, .. } => key.as_deref(),
            ProfileError::Invalid { key, .. } | ProfileError::Total { key, .. } => Some(key),
            ProfileError::Read { .. } | ProfileError::UnknownProfile { .. } => None,
        }
    }

    /// The CLI flag the error is about, when the value came from an override.
    pub fn flag(&self) -> Option<&'static str> {
        match self {
            ProfileError::Invalid { flag, .. } | ProfileError::Total { flag, .. } => *flag,
            _ => None,
        }
    }
}

fn key_prefix(key: &Option<String>) -> String {
    match key {
        Some(k) => format!("{k}: "),
        None => String::new(),
    }
}

fn subject(key: &str, flag: &Option<&'static str>) -> String {
    match flag {
        Some(f) => format!("{f} ({key})"),
        None => key.to_string(),
    }
}
