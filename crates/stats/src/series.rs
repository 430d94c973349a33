//! Figures over time for part of the fleet: one host's or one worker group's interval
//! rows, computed with the same `IntervalRow::from_sample` as the fleet's rows from the
//! part's merged samples, and, for a host, its CPU per interval as it reported it.
//! Reports draw these; the result model (`result`) does not carry them.

use serde::{Deserialize, Serialize};

use crate::result::IntervalRow;
use crate::usage::HostCpu;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Host or group name.
    pub name: String,
    /// One row per interval of the run (warm-up included), in time order.
    pub rows: Vec<IntervalRow>,
    /// The host's CPU in each of `rows` (None: not reported); empty for a group.
    pub cpu: Vec<Option<HostCpu>>,
}
