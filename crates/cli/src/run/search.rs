//! The search of `iofleet find-max`: the highest offered open-loop rate whose step meets
//! every objective, by bracketing then bisection. Pure: it calls a `measure` function
//! for each step and decides from what it returns, so it is unit-tested with a model of
//! a device and knows nothing of runs, engines or the store.
//!
//! The rules (docs/capacity.md repeats them):
//! - A step **passes** when it is sustained (measured IOPS at least [`SUSTAINED`] of the
//!   offered rate), every objective is met (an objective on an operation the step did
//!   not do, such as reads of a write-only mix, is not violated), and, with
//!   `stop_at_knee`, it is not past the knee.
//! - **Bracketing**: from the start rate, halve until a step passes, or double until one
//!   fails; at most [`MAX_BRACKET`] halvings or doublings.
//! - **Bisection** between the highest passing and lowest failing rate, until they are
//!   within the tolerance of the failing one.
//! - A step is **noisy** when some objective's figure lies within [`NOISE_BAND`] of its
//!   limit, where another sample of the same rate could well land on the other side. A
//!   noisy step is measured again (`repeat` 1, then 2 if the two disagree) and the
//!   majority decides.
//! - **The knee** (`stop_at_knee`): a light step at [`KNEE_LIGHT`] of the start rate
//!   gives the unloaded mean latency; a step whose mean latency exceeds [`KNEE_FACTOR`]
//!   times it is past the knee and fails (in an M/M/1 queue that is 50% utilisation).
//!
//! [`find_max_count`] searches a whole number instead (the hosts of `find-max --over
//! hosts`): from 1, doubling until a step fails or the most is reached, then bisection
//! until the highest passing and lowest failing count are neighbours. The same judge
//! decides each step, the sustained rule against the load offered at that count, and the
//! knee's light step is the count 1.

/// A step is sustained when it completed at least this share of the offered rate.
pub const SUSTAINED: f64 = 0.9;
/// A figure within this relative distance of its limit makes the step noisy.
pub const NOISE_BAND: f64 = 0.05;
/// At most this many halvings (or doublings) while bracketing.
pub const MAX_BRACKET: u32 = 10;
/// The light step of `stop_at_knee`, as a share of the start rate.
pub const KNEE_LIGHT: f64 = 0.1;
/// Past the knee: mean latency above this many times the light step's.
pub const KNEE_FACTOR: f64 = 2.0;

/// What the search needs of one measured step.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub iops: f64,
    pub mean_us: Option<f64>,
    /// Per objective, in order: the measured figure (in its unit: µs, or % for CPU), None
    /// when there is none (no such I/O, CPU not measured).
    pub values: Vec<Option<f64>>,
    /// Ctrl-C ended the step: the search stops without a verdict for it.
    pub interrupted: bool,
}

/// How the search goes.
#[derive(Clone, Debug)]
pub struct Params {
    /// The first rate tried (total IOPS).
    pub start: f64,
    /// Relative width at which bisection stops (0.02 = 2%).
    pub tolerance: f64,
    /// Per objective: its limit, in the objective's unit (µs, or % of all cores).
    pub limits: Vec<f64>,
    pub stop_at_knee: bool,
    /// At most this many steps in all (repeats and the light step included).
    pub max_steps: usize,
}

/// Why a point failed, or that it passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The objective at this index was missed.
    Missed(usize),
    /// Less than [`SUSTAINED`] of the offered rate completed.
    NotSustained,
    PastKnee,
    /// The light step of `stop_at_knee` (no verdict).
    Light,
    Interrupted,
}

impl Outcome {
    pub fn passed(self) -> bool {
        self == Outcome::Pass
    }
}

/// One step the search measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The value searched: the offered total IOPS, or the count of [`find_max_count`].
    pub rate: f64,
    /// 0 for the first measurement of a rate, 1 and 2 for repeats of a noisy one.
    pub repeat: u32,
    pub measured: Measured,
    pub outcome: Outcome,
    pub noisy: bool,
}

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Bisection reached the tolerance.
    Converged,
    /// Even the lowest rate bracketing tried failed.
    NoneMet,
    /// Every rate up to the highest bracketing tried passed.
    NoFailure,
    /// `max_steps` were used up.
    OutOfSteps,
    Interrupted,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The highest passing rate and the index in `points` of its first passing
    /// measurement.
    pub best: Option<(f64, usize)>,
    pub points: Vec<Point>,
    pub end: End,
}

struct Search<'a, E> {
    p: &'a Params,
    measure: &'a mut dyn FnMut(f64, u32) -> Result<Measured, E>,
    /// The total IOPS offered at a searched value (None: closed loop, nothing to
    /// sustain).
    offered: &'a dyn Fn(f64) -> Option<f64>,
    points: Vec<Point>,
    light_mean_us: Option<f64>,
}

enum Step {
    /// `first`: the first passing measurement of the rate, when it passed.
    Verdict {
        passed: bool,
        first: usize,
    },
    Stop(End),
}

impl<E> Search<'_, E> {
    fn judge(&self, rate: f64, m: &Measured) -> (Outcome, bool) {
        if m.interrupted {
            return (Outcome::Interrupted, false);
        }
        let noisy = m
            .values
            .iter()
            .zip(&self.p.limits)
            .any(|(v, l)| v.is_some_and(|v| ((v - l) / l).abs() <= NOISE_BAND));
        if let Some(i) = m
            .values
            .iter()
            .zip(&self.p.limits)
            .position(|(v, l)| v.is_some_and(|v| v > *l))
        {
            return (Outcome::Missed(i), noisy);
        }
        if (self.offered)(rate).is_some_and(|offered| m.iops < SUSTAINED * offered) {
            return (Outcome::NotSustained, noisy);
        }
        if let (Some(light), Some(mean)) = (self.light_mean_us, m.mean_us) {
            if mean > KNEE_FACTOR * light {
                return (Outcome::PastKnee, noisy);
            }
        }
        (Outcome::Pass, noisy)
    }

    /// Measure `rate` (again when noisy) and decide.
    fn step(&mut self, rate: f64) -> Result<Step, E> {
        let mut first = None;
        let mut votes = (0u32, 0u32); // (pass, fail)
        for repeat in 0..3 {
            if self.points.len() >= self.p.max_steps {
                return Ok(Step::Stop(End::OutOfSteps));
            }
            let m = (self.measure)(rate, repeat)?;
            let (outcome, noisy) = self.judge(rate, &m);
            self.points.push(Point {
                rate,
                repeat,
                measured: m,
                outcome,
                noisy,
            });
            if outcome == Outcome::Interrupted {
                return Ok(Step::Stop(End::Interrupted));
            }
            if outcome.passed() {
                first.get_or_insert(self.points.len() - 1);
                votes.0 += 1;
            } else {
                votes.1 += 1;
            }
            // One clear measurement decides; a noisy one is measured again, and two
            // that agree (or the majority of three) decide.
            let decided = (repeat == 0 && !noisy) || votes.0 >= 2 || votes.1 >= 2;
            if decided {
                break;
            }
        }
        Ok(Step::Verdict {
            passed: votes.0 > votes.1,
            first: first.unwrap_or(0),
        })
    }
}

/// Run the search. `measure(rate, repeat)` runs one step at `rate` total IOPS; `repeat`
/// tells a repeat of a noisy step (which should draw a fresh sample, e.g. another seed).
pub fn find_max<E>(
    p: &Params,
    measure: &mut dyn FnMut(f64, u32) -> Result<Measured, E>,
) -> Result<Found, E> {
    let mut s = Search {
        p,
        measure,
        offered: &|rate: f64| Some(rate),
        points: Vec::new(),
        light_mean_us: None,
    };
    let done = |s: Search<'_, E>, best, end| Found {
        best,
        points: s.points,
        end,
    };
    if p.stop_at_knee {
        let rate = p.start * KNEE_LIGHT;
        let m = (s.measure)(rate, 0)?;
        let interrupted = m.interrupted;
        s.light_mean_us = m.mean_us;
        s.points.push(Point {
            rate,
            repeat: 0,
            measured: m,
            outcome: if interrupted {
                Outcome::Interrupted
            } else {
                Outcome::Light
            },
            noisy: false,
        });
        if interrupted {
            return Ok(done(s, None, End::Interrupted));
        }
    }
    // Bracketing: (highest pass, lowest fail).
    let mut best: Option<(f64, usize)> = None;
    let mut fail: Option<f64> = None;
    let mut rate = p.start;
    for _ in 0..=MAX_BRACKET {
        match s.step(rate)? {
            Step::Stop(end) => return Ok(done(s, best, end)),
            Step::Verdict {
                passed: true,
                first,
            } => {
                best = Some((rate, first));
                if fail.is_some() {
                    break;
                }
                rate *= 2.0;
            }
            Step::Verdict { passed: false, .. } => {
                fail = Some(rate);
                if best.is_some() {
                    break;
                }
                rate /= 2.0;
            }
        }
    }
    let (Some((mut lo, mut lo_at)), Some(mut hi)) = (best, fail) else {
        let end = if best.is_none() {
            End::NoneMet
        } else {
            End::NoFailure
        };
        return Ok(done(s, best, end));
    };
    // Bisection.
    while (hi - lo) / hi > p.tolerance {
        let mid = (lo + hi) / 2.0;
        match s.step(mid)? {
            Step::Stop(end) => return Ok(done(s, Some((lo, lo_at)), end)),
            Step::Verdict {
                passed: true,
                first,
            } => {
                lo = mid;
                lo_at = first;
            }
            Step::Verdict { passed: false, .. } => hi = mid,
        }
    }
    Ok(done(s, Some((lo, lo_at)), End::Converged))
}

/// Search the highest count from 1 to `most` (hosts) whose step passes. `measure(k,
/// repeat)` runs one step at count `k`; `offered(k)` is the total IOPS it offers (None:
/// closed loop). `p.start` and `p.tolerance` do not apply: the counts are whole, and
/// the search ends when the highest pass and the lowest failure are neighbours. With
/// `p.stop_at_knee`, the step of count 1 is the light one whose mean latency the others
/// are held to (it is judged as well).
pub fn find_max_count<E>(
    p: &Params,
    most: u32,
    offered: &dyn Fn(u32) -> Option<f64>,
    measure: &mut dyn FnMut(u32, u32) -> Result<Measured, E>,
) -> Result<Found, E> {
    let mut as_count = |k: f64, repeat: u32| measure(k as u32, repeat);
    let offered_at = |k: f64| offered(k as u32);
    let mut s = Search {
        p,
        measure: &mut as_count,
        offered: &offered_at,
        points: Vec::new(),
        light_mean_us: None,
    };
    let done = |s: Search<'_, E>, best, end| Found {
        best,
        points: s.points,
        end,
    };
    let mut best: Option<(u32, usize)> = None;
    let mut k = 1u32;
    let most = most.max(1);
    // Bracketing: 1, 2, 4, … up to `most`, until a count fails.
    let mut hi = loop {
        let step = s.step(k as f64)?;
        if p.stop_at_knee && s.light_mean_us.is_none() {
            s.light_mean_us = s.points.first().and_then(|pt| pt.measured.mean_us);
        }
        match step {
            Step::Stop(end) => return Ok(done(s, best.map(|(k, i)| (k as f64, i)), end)),
            Step::Verdict {
                passed: true,
                first,
            } => {
                best = Some((k, first));
                if k == most {
                    return Ok(done(s, Some((k as f64, first)), End::NoFailure));
                }
                k = (k * 2).min(most);
            }
            Step::Verdict { passed: false, .. } => break k,
        }
    };
    let Some((mut lo, mut lo_at)) = best else {
        return Ok(done(s, None, End::NoneMet));
    };
    // Bisection on whole counts.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match s.step(mid as f64)? {
            Step::Stop(end) => return Ok(done(s, Some((lo as f64, lo_at)), end)),
            Step::Verdict {
                passed: true,
                first,
            } => {
                lo = mid;
                lo_at = first;
            }
            Step::Verdict { passed: false, .. } => hi = mid,
        }
    }
    Ok(done(s, Some((lo as f64, lo_at)), End::Converged))
}

/// The knee of a curve of mean latency against load, in the order of the load: the last
/// point before the first whose mean latency exceeds [`KNEE_FACTOR`] times the first
/// point's (the first when even the second does; the last when none does). Points
/// without a latency are skipped; fewer than two: no curve, no knee.
pub fn knee<T: Copy>(points: &[(T, Option<f64>)]) -> Option<T> {
    let mut with = points.iter().filter_map(|(x, m)| m.map(|m| (*x, m)));
    let (first, light) = with.next()?;
    with.clone().next()?;
    let mut knee = first;
    for (x, m) in with {
        if m > KNEE_FACTOR * light {
            return Some(knee);
        }
        knee = x;
    }
    Some(knee)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clients` open-loop clients of 500 IOPS each on one M/M/1 device of `mu`/s: the
    /// p99 (µs) is ln(100)/(μ − λ), sustained while λ < μ.
    fn clients(mu: f64) -> impl FnMut(u32, u32) -> Result<Measured, ()> {
        move |k, _| {
            let lambda = 500.0 * k as f64;
            let (iops, p99) = match lambda < mu {
                true => (lambda, 100f64.ln() / (mu - lambda) * 1e6),
                false => (mu, 1e9),
            };
            Ok(Measured {
                iops,
                mean_us: Some(p99 / 100f64.ln()),
                values: vec![Some(p99)],
                interrupted: false,
            })
        }
    }

    #[test]
    fn the_count_search_finds_the_most_clients_at_the_objective() {
        // μ = 5000: p99 <= 3 ms ⇔ λ <= 5000 − 1535 = 3465 ⇔ 6 clients (7 give 3.07 ms,
        // 6 give 2.3 ms).
        let offered = |k: u32| Some(500.0 * k as f64);
        let f = find_max_count(&params(1.0, 3_000.0), 16, &offered, &mut clients(5_000.0)).unwrap();
        assert_eq!(f.end, End::Converged);
        assert_eq!(f.best.unwrap().0, 6.0);
        let tried: Vec<f64> = f.points.iter().map(|p| p.rate).collect();
        // 7 is within 5% of the limit: noisy, measured three times (always the same).
        assert_eq!(tried, vec![1.0, 2.0, 4.0, 8.0, 6.0, 7.0, 7.0]);
        // Every count passes on an idle device: the most is the answer.
        let f = find_max_count(&params(1.0, 3_000.0), 5, &offered, &mut clients(1e6)).unwrap();
        assert_eq!((f.best.map(|b| b.0), f.end), (Some(5.0), End::NoFailure));
        let tried: Vec<f64> = f.points.iter().map(|p| p.rate).collect();
        assert_eq!(tried, vec![1.0, 2.0, 4.0, 5.0]);
        // Even one client misses: none met.
        let f = find_max_count(&params(1.0, 3_000.0), 8, &offered, &mut clients(1_000.0)).unwrap();
        assert_eq!((f.best, f.end), (None, End::NoneMet));
        // A device that cannot keep up fails on what it sustains.
        let mut p = params(1.0, 1e12);
        p.limits = vec![1e12];
        let f = find_max_count(&p, 16, &offered, &mut clients(2_600.0)).unwrap();
        assert_eq!(f.best.unwrap().0, 5.0);
        assert!(f.points.iter().any(|p| p.outcome == Outcome::NotSustained));
    }

    #[test]
    fn the_count_search_holds_each_count_to_twice_the_mean_latency_of_one() {
        // Mean = 1/(μ − λ): 222 µs at 1 client (μ = 5000, λ = 500); twice that is passed
        // beyond λ = 2750, from 6 clients on, whatever the loose objective says.
        let mut p = params(1.0, 1e12);
        p.stop_at_knee = true;
        let offered = |k: u32| Some(500.0 * k as f64);
        let f = find_max_count(&p, 16, &offered, &mut clients(5_000.0)).unwrap();
        assert_eq!((f.best.unwrap().0, f.end), (5.0, End::Converged));
        assert_eq!(f.points[0].outcome, Outcome::Pass);
        let past: Vec<f64> = f
            .points
            .iter()
            .filter(|p| p.outcome == Outcome::PastKnee)
            .map(|p| p.rate)
            .collect();
        assert_eq!(past, vec![8.0, 6.0]);
    }

    #[test]
    fn the_knee_is_the_last_load_before_latency_doubles() {
        let curve = [
            (1, Some(100.0)),
            (2, Some(150.0)),
            (4, Some(199.0)),
            (8, Some(450.0)),
        ];
        assert_eq!(knee(&curve), Some(4));
        assert_eq!(knee(&curve[..3]), Some(4));
        assert_eq!(knee(&[(1, Some(100.0)), (2, Some(201.0))]), Some(1));
        assert_eq!(
            knee(&[(1, None), (2, Some(10.0)), (4, Some(30.0))]),
            Some(2)
        );
        assert_eq!(knee::<u32>(&[]), None);
        assert_eq!(knee(&[(1, Some(100.0)), (2, None)]), None);
    }

    /// A device whose p99 is `base / (1 - rate/cap)` µs and that completes at most
    /// `cap` IOPS: a simple hockey stick.
    fn device(cap: f64, base: f64) -> impl FnMut(f64, u32) -> Result<Measured, ()> {
        move |rate, _| {
            let rho = rate / cap;
            let lat = if rho < 1.0 { base / (1.0 - rho) } else { 1e9 };
            Ok(Measured {
                iops: rate.min(cap),
                mean_us: Some(lat / 2.0),
                values: vec![Some(lat)],
                interrupted: false,
            })
        }
    }

    fn params(start: f64, limit: f64) -> Params {
        Params {
            start,
            tolerance: 0.02,
            limits: vec![limit],
            stop_at_knee: false,
            max_steps: 60,
        }
    }

    #[test]
    fn bisection_finds_the_rate_at_the_limit_from_above_and_below() {
        // p99 = 100 / (1 - r/10000) <= 400 µs  ⇔  r <= 7500.
        for start in [10_000.0, 1_000.0, 7_400.0] {
            let f = find_max(&params(start, 400.0), &mut device(10_000.0, 100.0)).unwrap();
            let (best, at) = f.best.unwrap();
            assert_eq!(f.end, End::Converged, "start {start}");
            assert!(
                (7_500.0 * 0.98..=7_500.0).contains(&best),
                "start {start}: {best}"
            );
            assert_eq!(f.points[at].rate, best);
            assert!(f.points[at].outcome.passed());
            // Every failing point is above the answer, every passing one at or below.
            for pt in &f.points {
                assert_eq!(pt.outcome.passed(), pt.rate <= 7_500.0, "{pt:?}");
            }
        }
    }

    #[test]
    fn a_cpu_objective_lands_within_five_points_below_the_limit_and_the_next_step_up_exceeds_it() {
        // Host CPU rising with the rate, 5% idle plus 1% per 10,000 IOPS (40% at
        // 350,000), with up to ±1.5 points of deterministic jitter from other work.
        let cpu = |rate: f64, repeat: u32| {
            let jitter = ((rate / 997.0 + repeat as f64).sin()) * 1.5;
            5.0 + rate / 10_000.0 + jitter
        };
        let mut dev = |rate: f64, repeat: u32| -> Result<Measured, ()> {
            Ok(Measured {
                iops: rate,
                mean_us: Some(10.0),
                values: vec![Some(cpu(rate, repeat))],
                interrupted: false,
            })
        };
        let mut p = params(2_000_000.0, 40.0);
        p.tolerance = 0.05;
        let f = find_max(&p, &mut dev).unwrap();
        assert_eq!(f.end, End::Converged);
        let (rate, at) = f.best.unwrap();
        let found = f.points[at].measured.values[0].unwrap();
        assert!((35.0..=40.0).contains(&found), "{found}% at {rate}");
        // The next rate up the search tried failed on CPU, by the majority of its
        // measurements, and lies within the tolerance.
        let next = f
            .points
            .iter()
            .map(|p| p.rate)
            .filter(|r| *r > rate)
            .fold(f64::INFINITY, f64::min);
        assert!((next - rate) / next <= 0.05, "{rate} {next}");
        let over: Vec<bool> = f
            .points
            .iter()
            .filter(|p| p.rate == next)
            .map(|p| p.measured.values[0].unwrap() > 40.0)
            .collect();
        assert!(
            over.iter().filter(|o| **o).count() * 2 > over.len(),
            "{over:?}"
        );
    }

    #[test]
    fn a_rate_the_device_cannot_carry_is_not_sustained() {
        // The limit is loose, but beyond 10,000 IOPS the device falls behind.
        let mut dev = |rate: f64, _| -> Result<Measured, ()> {
            Ok(Measured {
                iops: rate.min(10_000.0),
                mean_us: Some(50.0),
                values: vec![Some(100.0)],
                interrupted: false,
            })
        };
        let f = find_max(&params(4_000.0, 1_000.0), &mut dev).unwrap();
        let best = f.best.unwrap().0;
        assert!(
            (10_000.0 * 0.98..=10_000.0 / SUSTAINED).contains(&best),
            "{best}"
        );
        assert!(f.points.iter().any(|p| p.outcome == Outcome::NotSustained));
    }

    #[test]
    fn noisy_steps_are_repeated_and_the_majority_decides() {
        // Within 5% of the limit: the first sample fails, the two repeats pass.
        let mut calls = Vec::new();
        let mut dev = |rate: f64, repeat: u32| -> Result<Measured, ()> {
            calls.push((rate, repeat));
            let v = if rate > 4_000.0 {
                2_000.0
            } else if rate == 4_000.0 && repeat == 0 {
                1_020.0
            } else {
                990.0
            };
            Ok(Measured {
                iops: rate,
                mean_us: None,
                values: vec![Some(v)],
                interrupted: false,
            })
        };
        let f = find_max(&params(8_000.0, 1_000.0), &mut dev).unwrap();
        let four: Vec<&Point> = f.points.iter().filter(|p| p.rate == 4_000.0).collect();
        assert_eq!(four.len(), 3, "{:?}", f.points);
        assert!(four.iter().all(|p| p.noisy));
        assert_eq!(four[0].outcome, Outcome::Missed(0));
        // The majority passed 4,000, and everything above fails.
        assert_eq!(f.best.unwrap().0, 4_000.0);
        // The point marked is a passing measurement of that rate.
        let at = &f.points[f.best.unwrap().1];
        assert_eq!(
            (at.rate, at.repeat, at.outcome),
            (4_000.0, 1, Outcome::Pass)
        );
    }

    #[test]
    fn nothing_met_or_nothing_failed_is_said() {
        let f = find_max(&params(1_000.0, 1.0), &mut device(10_000.0, 100.0)).unwrap();
        assert_eq!((f.best, f.end), (None, End::NoneMet));
        assert_eq!(f.points.len(), MAX_BRACKET as usize + 1);
        let f = find_max(&params(1.0, 1e12), &mut |r: f64,
                                                   _|
         -> Result<Measured, ()> {
            Ok(Measured {
                iops: r,
                mean_us: None,
                values: vec![Some(1.0)],
                interrupted: false,
            })
        })
        .unwrap();
        assert_eq!(f.end, End::NoFailure);
        assert_eq!(f.best.unwrap().0, 1024.0);
    }

    #[test]
    fn the_knee_stops_the_search_before_the_objective_does() {
        // mean = 50 / (1 - ρ): twice the light step's (≈ 50/(1-0.1·start/cap)) near ρ ≈ 0.5.
        let mut p = params(10_000.0, 1e6);
        p.stop_at_knee = true;
        let f = find_max(&p, &mut device(10_000.0, 100.0)).unwrap();
        assert_eq!(f.points[0].outcome, Outcome::Light);
        assert_eq!(f.points[0].rate, 1_000.0);
        // Light mean = 50/0.9; knee where 50/(1-ρ) = 2 × 50/0.9 ⇔ ρ = 0.55.
        let best = f.best.unwrap().0;
        assert!((5_500.0 * 0.98..=5_500.0).contains(&best), "{best}");
        assert!(f.points.iter().any(|p| p.outcome == Outcome::PastKnee));
    }

    #[test]
    fn an_interrupted_step_ends_the_search_with_what_was_found() {
        let mut n = 0;
        let mut dev = |rate: f64, _| -> Result<Measured, ()> {
            n += 1;
            Ok(Measured {
                iops: rate,
                mean_us: None,
                values: vec![Some(if rate > 3_000.0 { 2e3 } else { 1.0 })],
                interrupted: n == 4,
            })
        };
        let f = find_max(&params(8_000.0, 1_000.0), &mut dev).unwrap();
        assert_eq!(f.end, End::Interrupted);
        assert_eq!(f.points.len(), 4);
        assert_eq!(f.best.unwrap().0, 2_000.0);
        // A measuring error is the caller's.
        let e = find_max(&params(8_000.0, 1_000.0), &mut |_,
                                                          _|
         -> Result<
            Measured,
            &str,
        > { Err("boom") });
        assert_eq!(e, Err("boom"));
    }
}
