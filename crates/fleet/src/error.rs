//! `FleetError`: what planning, running, verifying or preconditioning a fleet can fail
//! with, and whether the user's input is to blame (exit 2) or the run failed (exit 1).
//! Every module of the crate returns it; it lives here, below them all, so that no
//! module imports an error from one that implements a run. The errors of reading a
//! `--hosts` file are the inventory's (`inventory::InventoryError`).

use iofleet_engine::target::TargetError;
use iofleet_engine::EngineError;

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A problem the user fixes by changing a flag or key (named in the message).
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Setup(String),
}

impl FleetError {
    pub fn is_input_error(&self) -> bool {
        match self {
            FleetError::Target(t) => t.is_input_error(),
            FleetError::Input(_) => true,
            FleetError::Engine(EngineError::UringUnavailable(_)) => true,
            _ => false,
        }
    }
}
