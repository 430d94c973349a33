//! `Exit`: an error that carries the process's exit code, what every module of the
//! binary returns (`anyhow` is not used: each failure already knows its code). Defined
//! here, below every other module, so that none of them imports the crate root.
//!
//! Codes: 0 success; 1 run-time failure; 2 bad input (a flag, a TOML key, a target
//! refused for safety); 3 the run is invalid: hosts lost mid-run left it below its
//! quorum (every host, unless --min-hosts or --tolerate-host-loss); 4 verified data
//! found corrupt (`run --verify`, `verify`); 5 I/O errors (the run went on; failing
//! disks were taken out); 130 interrupted by Ctrl-C (what was measured is still
//! printed).

/// An error that carries its exit code.
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    pub fn input(message: impl std::fmt::Display) -> Self {
        Exit {
            code: 2,
            message: message.to_string(),
        }
    }
    pub fn failure(message: impl std::fmt::Display) -> Self {
        Exit {
            code: 1,
            message: message.to_string(),
        }
    }
}
