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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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

/// A fleet error as an exit: 2 for bad input, 1 otherwise.
pub(crate) fn fleet_exit(e: iofleet_fleet::FleetError) -> Exit {
    if e.is_input_error() {
        Exit::input(e)
    } else {
        Exit::failure(e)
    }
}

/// The flag the first Ctrl-C sets (stop and report what was measured); a second Ctrl-C
/// exits at once. One for the process: every caller gets the same flag.
pub(crate) fn ctrl_c_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if s.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            // Idle I/O threads nap until their next I/O: wake them to see the stop.
            iofleet_engine::wake_sleepers();
        });
        stop
    })
    .clone()
}
