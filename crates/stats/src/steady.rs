//! The SNIA SSS PTS steady-state rule, as a pure function of per-round IOPS, and the
//! `steady_state` block a steady run reports.
//!
//! A round is one repeated measurement; the rule looks at the last `WINDOW` rounds and
//! holds when (1) their range (max − min) is at most 20% of their mean, and (2) the
//! excursion of their least-squares line across the window (|slope| × (WINDOW − 1),
//! the slope per round) is at most 10% of their mean. At most `MAX_ROUNDS` rounds are
//! run. Both bounds are inclusive, as the PTS writes them (≤). This module does no
//! measuring: the CLI runs the rounds and asks `check_window` after each one.

use serde::{Deserialize, Serialize};

/// Rounds in the measurement window.
pub const WINDOW: usize = 5;
/// Rounds run at most before the run is reported not steady.
pub const MAX_ROUNDS: u32 = 25;
/// The largest range of the window's IOPS, percent of their mean.
pub const MAX_RANGE_PCT: f64 = 20.0;
/// The largest excursion of the window's least-squares line, percent of their mean.
pub const MAX_EXCURSION_PCT: f64 = 10.0;

/// The rule applied to one window of rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowCheck {
    pub mean_iops: f64,
    /// (max − min) ÷ mean × 100.
    pub range_pct: f64,
    /// |slope| × (rounds − 1) ÷ mean × 100, the slope of the least-squares line through
    /// (round, IOPS).
    pub excursion_pct: f64,
    pub holds: bool,
}

/// The rule over `iops` (one window, in round order). A window of fewer than two
/// rounds, or whose mean is not above zero, never holds.
pub fn check_window(iops: &[f64]) -> WindowCheck {
    let n = iops.len() as f64;
    let mean = iops.iter().sum::<f64>() / n.max(1.0);
    let (lo, hi) = iops
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &y| {
            (lo.min(y), hi.max(y))
        });
    // Least squares through (x = 0..n, y): slope = Σ(x − x̄)(y − ȳ) ÷ Σ(x − x̄)².
    let x_mean = (n - 1.0) / 2.0;
    let (sxy, sxx) = iops
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(sxy, sxx), (i, &y)| {
            let dx = i as f64 - x_mean;
            (sxy + dx * (y - mean), sxx + dx * dx)
        });
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let usable = iops.len() >= 2 && mean > 0.0 && mean.is_finite();
    let pct = |v: f64| if usable { v / mean * 100.0 } else { f64::NAN };
    let range_pct = pct(hi - lo);
    let excursion_pct = pct(slope.abs() * (n - 1.0));
    WindowCheck {
        mean_iops: mean,
        range_pct,
        excursion_pct,
        holds: usable && range_pct <= MAX_RANGE_PCT && excursion_pct <= MAX_EXCURSION_PCT,
    }
}

/// The first round (1-based) at which the rule holds over the `WINDOW` rounds ending
/// there, looking at no more than `MAX_ROUNDS` rounds; None when it never does.
pub fn first_steady_round(round_iops: &[f64]) -> Option<u32> {
    let n = round_iops.len().min(MAX_ROUNDS as usize);
    (WINDOW..=n)
        .find(|&end| check_window(&round_iops[end - WINDOW..end]).holds)
        .map(|end| end as u32)
}

/// Whether and when a run reached steady state (`steady_state` of the JSON result).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// The rule held over the window ending at `round`.
    pub held: bool,
    /// The round (1-based) that ended the window: the first at which the rule held, or,
    /// when it never did, the last round run.
    pub round: u32,
    /// Rounds run (= `round`: the rounds stop when the rule holds).
    pub rounds: u32,
    pub max_rounds: u32,
    /// Simulated or wall-clock seconds each round measured.
    pub round_s: f64,
    /// IOPS of every round run, in order.
    pub round_iops: Vec<f64>,
    /// IOPS of the window's rounds (the last `WINDOW` rounds run; fewer when the run
    /// ended before `WINDOW` rounds).
    pub window_iops: Vec<f64>,
    /// Mean of `window_iops`: the steady-state IOPS SNIA reports.
    pub window_mean_iops: Option<f64>,
    /// Range of the window, percent of its mean (None with fewer than two rounds).
    pub range_pct: Option<f64>,
    /// Least-squares excursion across the window, percent of its mean.
    pub excursion_pct: Option<f64>,
    /// The stored run of each round, in order (empty when not saved).
    #[serde(default)]
    pub round_runs: Vec<String>,
}

impl SteadyState {
    /// The block for rounds measured so far (`round_iops`), the rule applied to the
    /// last window of them.
    pub fn from_rounds(round_iops: &[f64], round_s: f64, round_runs: Vec<String>) -> Self {
        let start = round_iops.len().saturating_sub(WINDOW);
        let window = &round_iops[start..];
        let c = check_window(window);
        let finite = |v: f64| v.is_finite().then_some(v);
        SteadyState {
            held: window.len() == WINDOW && c.holds,
            round: round_iops.len() as u32,
            rounds: round_iops.len() as u32,
            max_rounds: MAX_ROUNDS,
            round_s,
            round_iops: round_iops.to_vec(),
            window_iops: window.to_vec(),
            window_mean_iops: (!window.is_empty()).then_some(c.mean_iops),
            range_pct: finite(c.range_pct),
            excursion_pct: finite(c.excursion_pct),
            round_runs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_boundary_is_inclusive() {
        // Mean 100, symmetric so the slope is 0: range exactly 20 holds, 20.5 does not.
        let at = [90.0, 110.0, 100.0, 110.0, 90.0];
        let c = check_window(&at);
        assert!((c.range_pct - 20.0).abs() < 1e-9, "{c:?}");
        assert!(c.excursion_pct.abs() < 1e-9, "{c:?}");
        assert!(c.holds);
        let over = [89.75, 110.25, 100.0, 110.25, 89.75];
        let c = check_window(&over);
        assert!((c.range_pct - 20.5).abs() < 1e-9, "{c:?}");
        assert!(!c.holds);
    }

    #[test]
    fn slope_boundary_is_inclusive() {
        // A straight line 95, 97.5, 100, 102.5, 105: slope 2.5 per round, excursion
        // 2.5 × 4 = 10 = 10% of the mean 100; range 10% is well inside.
        let at = [95.0, 97.5, 100.0, 102.5, 105.0];
        let c = check_window(&at);
        assert!((c.excursion_pct - 10.0).abs() < 1e-9, "{c:?}");
        assert!((c.range_pct - 10.0).abs() < 1e-9, "{c:?}");
        assert!(c.holds);
        // Slope 2.6: excursion 10.4% fails although the range (10.4%) is fine.
        let over = [94.8, 97.4, 100.0, 102.6, 105.2];
        let c = check_window(&over);
        assert!((c.excursion_pct - 10.4).abs() < 1e-9, "{c:?}");
        assert!(c.range_pct < MAX_RANGE_PCT);
        assert!(!c.holds);
        // Falling lines count the same as rising ones.
        let falling: Vec<f64> = over.iter().rev().copied().collect();
        assert!((check_window(&falling).excursion_pct - 10.4).abs() < 1e-9);
    }

    #[test]
    fn slope_is_the_least_squares_one_not_the_end_points() {
        // End points equal (a naive last − first is 0) but the fitted line rises.
        // ȳ = 108; Σdx·dy = (-2)(-8) + (-1)(-8) + 0·12 + 1·12 + 2·(-8) = 20; Σdx² = 10;
        // slope 2, excursion 2 × 4 = 8.
        let ys = [100.0, 100.0, 120.0, 120.0, 100.0];
        let c = check_window(&ys);
        assert!(
            (c.excursion_pct - 2.0 * 4.0 / 108.0 * 100.0).abs() < 1e-9,
            "{c:?}"
        );
    }

    #[test]
    fn degenerate_windows_never_hold() {
        assert!(!check_window(&[]).holds);
        assert!(!check_window(&[100.0]).holds);
        assert!(!check_window(&[0.0; 5]).holds);
        assert!(check_window(&[100.0; 5]).holds);
    }

    #[test]
    fn first_steady_round_needs_a_full_window_and_stops_at_the_limit() {
        // Falling by half each round, then flat from round 6: the first window that is
        // flat enough ends at round 10 (rounds 6..10), not before.
        let mut ys = vec![3200.0, 1600.0, 800.0, 400.0, 200.0];
        ys.extend([100.0; 10]);
        assert_eq!(first_steady_round(&ys), Some(10));
        assert_eq!(first_steady_round(&[100.0; 4]), None);
        assert_eq!(first_steady_round(&[100.0; 5]), Some(5));
        // Never steady: doubling every round.
        let growing: Vec<f64> = (0..30).map(|i| 2f64.powi(i)).collect();
        assert_eq!(first_steady_round(&growing), None);
        // Steady only after the limit: not counted.
        let mut late: Vec<f64> = (0..25).map(|i| 2f64.powi(i)).collect();
        late.extend([1.0; 10]);
        assert_eq!(first_steady_round(&late), None);
    }

    #[test]
    fn block_reports_the_last_window() {
        let ys = [50.0, 100.0, 100.0, 100.0, 100.0, 100.0];
        let s = SteadyState::from_rounds(&ys, 10.0, vec![]);
        assert!(s.held);
        assert_eq!((s.round, s.rounds, s.max_rounds), (6, 6, MAX_ROUNDS));
        assert_eq!(s.window_iops, vec![100.0; 5]);
        assert_eq!(s.window_mean_iops, Some(100.0));
        assert_eq!((s.range_pct, s.excursion_pct), (Some(0.0), Some(0.0)));
        let short = SteadyState::from_rounds(&[100.0; 3], 10.0, vec![]);
        assert!(!short.held, "three rounds are not a window");
        let one = SteadyState::from_rounds(&[100.0], 10.0, vec![]);
        assert_eq!((one.range_pct, one.excursion_pct), (None, None));
    }
}
