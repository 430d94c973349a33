//! The `null` engine: every I/O succeeds with `result = len` and no byte is moved, like
//! fio's `engines/null.c`. It has two modes. *Instant* completes everything at the next
//! `submit_and_reap` and measures the harness itself. *Latency* gives each I/O a due time
//! drawn from its file's `LatencyModel` on a shared `VirtualClock` and completes it when
//! simulated time reaches it, so whole runs are deterministic and repeatable in tests.
//! Each file (a worker's disk) draws from its own model, random generator and sequence,
//! so its latencies do not depend on which other files share the engine. The engine
//! never sleeps and never reads the real clock; it does not model bandwidth, queueing in
//! a device, or errors.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::buf::BufferPool;
use crate::{Caps, Clock, Completion, Engine, EngineError, EngineParams, IoReq, VirtualClock};

/// Distribution of injected completion latencies, in nanoseconds. Every sample is at
/// least 1 ns, so an I/O never completes at the instant it was queued.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencyModel {
    /// The same latency every time.
    Fixed(u64),
    /// Uniform over `lo_ns..=hi_ns`.
    Uniform { lo_ns: u64, hi_ns: u64 },
    /// Exponential with the given mean.
    Exponential { mean_ns: u64 },
    /// Log-normal with the given median and shape `sigma` (standard deviation of ln).
    LogNormal { median_ns: u64, sigma: f64 },
    /// These values, cycled in order (the n-th I/O gets `samples[n % len]`).
    Samples(Vec<u64>),
}

impl LatencyModel {
    /// Check parameters once, before a run, so `sample` cannot fail or panic.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |why: &str| Err(EngineError::Setup(format!("null engine latency: {why}")));
        match self {
            LatencyModel::Uniform { lo_ns, hi_ns } if lo_ns > hi_ns => {
                bad("uniform lower bound is above the upper bound")
            }
            LatencyModel::LogNormal { sigma, .. } if !(sigma.is_finite() && *sigma >= 0.0) => {
                bad("log-normal sigma must be finite and >= 0")
            }
            LatencyModel::Samples(v) if v.is_empty() => bad("sample list is empty"),
            _ => Ok(()),
        }
    }

    /// Latency of the `seq`-th I/O (0-based, in queue order), drawing from `rng` when
    /// the model is random. Call `validate` first; invalid parameters give arbitrary
    /// (but >= 1 ns) values rather than a panic.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, seq: u64) -> u64 {
        let ns = match self {
            LatencyModel::Fixed(ns) => *ns,
            LatencyModel::Uniform { lo_ns, hi_ns } => {
                rng.random_range(*lo_ns.min(hi_ns)..=*hi_ns.max(lo_ns))
            }
            LatencyModel::Exponential { mean_ns } => {
                // Inverse CDF; `1 - u` is in (0, 1], so the log is finite.
                let u: f64 = rng.random();
                (-(*mean_ns as f64) * (1.0 - u).ln()).round() as u64
            }
            LatencyModel::LogNormal { median_ns, sigma } => {
                let z: f64 = rng.sample(StandardNormal);
                // `as` saturates, and NaN becomes 0 (then clamped to 1 below).
                (*median_ns as f64 * (sigma * z).exp()).round() as u64
            }
            LatencyModel::Samples(v) if v.is_empty() => 1,
            LatencyModel::Samples(v) => v[(seq % v.len() as u64) as usize],
        };
        ns.max(1)
    }
}

impl LatencyModel {
    /// Parse models separated by `;` (see `FromStr`); at least one.
    pub fn parse_list(spec: &str) -> Result<Vec<LatencyModel>, String> {
        let models = spec
            .split(';')
            .filter(|m| !m.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if models.is_empty() {
            return Err("no latency model given".into());
        }
        Ok(models)
    }
}

/// A time in nanoseconds, or with `ns`, `us` or `ms`.
pub(crate) fn parse_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000_000.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1_000.0)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a time (examples: 500, 80us, 2ms)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' is not a time"));
    }
    Ok((v * mult).round() as u64)
}

/// `fixed:T`, `uniform:LO:HI`, `exp:MEAN`, `lognormal:MEDIAN:SIGMA` or
/// `samples:T1,T2,…` (cycled in order); times in ns, or with `ns`, `us` or `ms`.
impl std::str::FromStr for LatencyModel {
    type Err = String;
    fn from_str(m: &str) -> Result<Self, String> {
        let parts: Vec<&str> = m.trim().split(':').collect();
        let model = match parts.as_slice() {
            ["fixed", v] => LatencyModel::Fixed(parse_ns(v)?),
            ["uniform", lo, hi] => LatencyModel::Uniform {
                lo_ns: parse_ns(lo)?,
                hi_ns: parse_ns(hi)?,
            },
            ["exp", mean] => LatencyModel::Exponential {
                mean_ns: parse_ns(mean)?,
            },
            ["lognormal", med, sigma] => LatencyModel::LogNormal {
                median_ns: parse_ns(med)?,
                sigma: sigma
                    .parse()
                    .map_err(|_| format!("'{sigma}' is not a number"))?,
            },
            ["samples", list] => LatencyModel::Samples(
                list.split(',').map(parse_ns).collect::<Result<Vec<_>, _>>()?,
            ),
            _ => {
                return Err(format!(
                    "'{}' is not a latency model (fixed:T, uniform:LO:HI, exp:MEAN, lognormal:MEDIAN:SIGMA, samples:T1,T2,…)",
                    m.trim()
                ))
            }
        };
        model.validate().map_err(|e| e.to_string())?;
        Ok(model)
    }
}

/// The `FromStr` grammar, times in ns, so a model survives the wire unchanged.
impl std::fmt::Display for LatencyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LatencyModel::Fixed(ns) => write!(f, "fixed:{ns}"),
            LatencyModel::Uniform { lo_ns, hi_ns } => write!(f, "uniform:{lo_ns}:{hi_ns}"),
            LatencyModel::Exponential { mean_ns } => write!(f, "exp:{mean_ns}"),
            LatencyModel::LogNormal { median_ns, sigma } => {
                write!(f, "lognormal:{median_ns}:{sigma}")
            }
            LatencyModel::Samples(v) => {
                let list: Vec<String> = v.iter().map(u64::to_string).collect();
                write!(f, "samples:{}", list.join(","))
            }
        }
    }
}

/// One in-flight simulated I/O: (due_ns, seq, slot, result), ordered by due time, then
/// queue order (`seq` is unique, so slot and result never decide).
pub(crate) type Due = Reverse<(u64, u64, u32, i32)>;

/// One file's latency source.
#[derive(Debug)]
struct FileLatency {
    model: LatencyModel,
    rng: SmallRng,
    /// I/Os queued to this file so far.
    seq: u64,
}

#[derive(Debug)]
struct Timed {
    files: Vec<FileLatency>,
    clock: VirtualClock,
    /// Min-heap on (due_ns, seq); capacity `slots`.
    in_flight: BinaryHeap<Due>,
    seq: u64,
}

#[derive(Debug)]
enum Mode {
    /// Completions waiting for the next `submit_and_reap`; capacity `slots`.
    Instant(Vec<Completion>),
    Latency(Box<Timed>),
}

/// An engine that moves no data. See the module documentation for the two modes.
#[derive(Debug)]
pub struct NullEngine {
    pool: BufferPool,
    mode: Mode,
}

impl NullEngine {
    /// Instant mode: everything queued completes at the next `submit_and_reap`.
    pub fn new(params: EngineParams, seed: u64) -> Result<Self, EngineError> {
        Ok(NullEngine {
            pool: BufferPool::new(params.slots, params.max_bs, seed)?,
            mode: Mode::Instant(Vec::with_capacity(params.slots as usize)),
        })
    }

    /// Latency mode in simulated time on `clock`: I/Os to file `i` take latencies from
    /// `per_file[i].0`, random ones from a `SmallRng` seeded with `per_file[i].1`, drawn
    /// in that file's queue order (so a file's latencies do not depend on which other
    /// files share the engine). `seed` fills the buffers.
    pub fn with_latency(
        params: EngineParams,
        seed: u64,
        per_file: Vec<(LatencyModel, u64)>,
        clock: VirtualClock,
    ) -> Result<Self, EngineError> {
        if per_file.is_empty() {
            return Err(EngineError::Setup(
                "null engine latency: no file to simulate".into(),
            ));
        }
        let mut files = Vec::with_capacity(per_file.len());
        for (model, file_seed) in per_file {
            model.validate()?;
            files.push(FileLatency {
                model,
                rng: SmallRng::seed_from_u64(file_seed),
                seq: 0,
            });
        }
        Ok(NullEngine {
            pool: BufferPool::new(params.slots, params.max_bs, seed)?,
            mode: Mode::Latency(Box::new(Timed {
                files,
                clock,
                in_flight: BinaryHeap::with_capacity(params.slots as usize),
                seq: 0,
            })),
        })
    }
}

impl Timed {
    fn reap(&mut self, min_complete: u32, timeout: Option<Duration>, out: &mut Vec<Completion>) {
        reap_due(&mut self.in_flight, &self.clock, min_complete, timeout, out);
    }
}

/// Complete what is due on `clock`; with fewer than `min_complete` due, time passes
/// (`sleep_until`: a jump in simulated time, a sleep on the wall clock) until enough
/// are, or until `timeout`. Shared by the engines that complete I/Os at computed times.
pub(crate) fn reap_due<C: Clock>(
    in_flight: &mut BinaryHeap<Due>,
    clock: &C,
    min_complete: u32,
    timeout: Option<Duration>,
    out: &mut Vec<Completion>,
) {
    let start = clock.now_ns();
    let deadline = timeout.map(|t| start.saturating_add(t.as_nanos() as u64));
    let mut reaped = 0u32;
    loop {
        let now = clock.now_ns();
        match in_flight.peek() {
            Some(Reverse((due, ..))) if *due <= now => {
                let Reverse((_, _, slot, result)) = in_flight.pop().expect("peeked");
                out.push(Completion { slot, result });
                reaped += 1;
            }
            _ if reaped >= min_complete => return,
            // Fewer than `min_complete` ready: time passes until the next one is due,
            // unless the timeout runs out first.
            Some(Reverse((due, ..))) => match deadline {
                Some(d) if *due > d => {
                    clock.sleep_until(d);
                    return;
                }
                _ => clock.sleep_until(*due),
            },
            // Nothing in flight: a real engine would sit out the timeout, or wait
            // forever without one; in simulation the latter returns at once.
            None => {
                if let Some(d) = deadline {
                    clock.sleep_until(d);
                }
                return;
            }
        }
    }
}

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    fn caps(&self) -> Caps {
        Caps {
            async_qd: true,
            needs_target: false,
            registered_buffers: false,
            registered_files: false,
            simulated_time: matches!(self.mode, Mode::Latency(_)),
            device_per_disk: false,
        }
    }

    fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
        self.pool.check_req(&req)?;
        let result = req.len as i32;
        match &mut self.mode {
            Mode::Instant(pending) => pending.push(Completion {
                slot: req.slot,
                result,
            }),
            Mode::Latency(t) => {
                let Some(f) = t.files.get_mut(req.file as usize) else {
                    return Err(crate::bad_file(&req, t.files.len()));
                };
                let lat = f.model.sample(&mut f.rng, f.seq);
                f.seq += 1;
                let due = t.clock.now_ns().saturating_add(lat);
                t.in_flight.push(Reverse((due, t.seq, req.slot, result)));
                t.seq += 1;
            }
        }
        Ok(())
    }

    /// Instant mode returns everything queued and ignores `timeout`; latency mode
    /// follows the `Engine` contract in simulated time.
    fn submit_and_reap(
        &mut self,
        min_complete: u32,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        match &mut self.mode {
            Mode::Instant(pending) => out.append(pending),
            Mode::Latency(t) => t.reap(min_complete, timeout, out),
        }
        Ok(())
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpKind;

    const P: EngineParams = EngineParams {
        slots: 8,
        max_bs: 4096,
    };

    fn req(slot: u32, len: u32) -> IoReq {
        IoReq {
            slot,
            file: 0,
            op: match slot % 2 {
                0 => OpKind::Read,
                _ => OpKind::Write,
            },
            offset: slot as u64 * 4096,
            len,
        }
    }

    fn c(slot: u32, result: i32) -> Completion {
        Completion { slot, result }
    }

    #[test]
    fn instant_mode_completes_everything_with_len() {
        let mut e = NullEngine::new(P, 1).unwrap();
        assert_eq!(e.name(), "null");
        assert!(e.caps().async_qd && !e.caps().needs_target);
        for slot in 0..8 {
            e.queue(req(slot, 512 * (slot + 1))).unwrap();
        }
        let mut out = Vec::with_capacity(8);
        e.submit_and_reap(1, Some(Duration::from_secs(3600)), &mut out)
            .unwrap();
        let want: Vec<_> = (0..8).map(|s| c(s, 512 * (s as i32 + 1))).collect();
        assert_eq!(out, want);
        out.clear();
        e.submit_and_reap(0, None, &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(e.buffer_mut(7).len(), 4096);
        assert!(e.queue(req(8, 512)).is_err());
    }

    #[test]
    fn latency_mode_completes_in_due_order_advancing_the_clock() {
        let clock = VirtualClock::new();
        let model = LatencyModel::Samples(vec![100, 300, 200]);
        let mut e = NullEngine::with_latency(P, 1, vec![(model, 1)], clock.clone()).unwrap();
        for slot in 0..3 {
            e.queue(req(slot, 4096)).unwrap();
        }
        let mut out = Vec::new();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!((clock.now_ns(), &out[..]), (100, &[c(0, 4096)][..]));
        out.clear();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!((clock.now_ns(), &out[..]), (200, &[c(2, 4096)][..]));
        out.clear();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!((clock.now_ns(), &out[..]), (300, &[c(1, 4096)][..]));
    }

    #[test]
    fn latency_mode_min_waits_for_the_min_th_and_returns_all_due() {
        let clock = VirtualClock::new();
        let model = LatencyModel::Samples(vec![100, 300, 200, 250]);
        let mut e = NullEngine::with_latency(P, 1, vec![(model, 1)], clock.clone()).unwrap();
        for slot in 0..4 {
            e.queue(req(slot, 4096)).unwrap();
        }
        let mut out = Vec::new();
        // min 0 at t=0: nothing due, no time passes.
        e.submit_and_reap(0, None, &mut out).unwrap();
        assert_eq!((clock.now_ns(), out.len()), (0, 0));
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(clock.now_ns(), 200);
        assert_eq!(out, [c(0, 4096), c(2, 4096)]);
        // Queued at t=200 with the cycled sample 100 → due 300, tying slot 1 (queued
        // earlier), which therefore completes first.
        e.queue(req(4, 512)).unwrap();
        out.clear();
        clock.advance_to(300);
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(out, [c(3, 4096), c(1, 4096), c(4, 512)]);
        assert_eq!(clock.now_ns(), 300);
        // More than in flight with no timeout returns at once rather than hanging.
        out.clear();
        e.submit_and_reap(5, None, &mut out).unwrap();
        assert_eq!((clock.now_ns(), out.len()), (300, 0));
    }

    #[test]
    fn each_file_draws_from_its_own_model_and_sequence() {
        let clock = VirtualClock::new();
        let models = vec![
            (LatencyModel::Samples(vec![100, 200]), 1),
            (LatencyModel::Fixed(1_000), 2),
        ];
        let mut e = NullEngine::with_latency(P, 1, models, clock.clone()).unwrap();
        let to = |slot, file| IoReq {
            file,
            ..req(slot, 4096)
        };
        // File 1's I/O does not advance file 0's sample sequence.
        e.queue(to(0, 1)).unwrap();
        e.queue(to(1, 0)).unwrap();
        e.queue(to(2, 0)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(3, None, &mut out).unwrap();
        assert_eq!(out, [c(1, 4096), c(2, 4096), c(0, 4096)]);
        assert_eq!(clock.now_ns(), 1_000);
        assert!(e
            .queue(to(3, 2))
            .unwrap_err()
            .to_string()
            .contains("file 2"));
    }

    #[test]
    fn latency_mode_timeout_advances_clock_by_exactly_the_timeout() {
        let clock = VirtualClock::new();
        let mut e =
            NullEngine::with_latency(P, 1, vec![(LatencyModel::Fixed(1_000), 1)], clock.clone())
                .unwrap();
        e.queue(req(0, 4096)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(1, Some(Duration::from_nanos(400)), &mut out)
            .unwrap();
        assert_eq!((clock.now_ns(), out.len()), (400, 0));
        e.submit_and_reap(1, Some(Duration::from_nanos(600)), &mut out)
            .unwrap();
        assert_eq!((clock.now_ns(), &out[..]), (1_000, &[c(0, 4096)][..]));
        // Due before the deadline: returns at the due time, not the deadline.
        e.queue(req(1, 4096)).unwrap();
        out.clear();
        e.submit_and_reap(1, Some(Duration::from_secs(1)), &mut out)
            .unwrap();
        assert_eq!((clock.now_ns(), &out[..]), (2_000, &[c(1, 4096)][..]));
        // Idle with a timeout: simulated time still passes.
        out.clear();
        e.submit_and_reap(1, Some(Duration::from_nanos(250)), &mut out)
            .unwrap();
        assert_eq!((clock.now_ns(), out.len()), (2_250, 0));
    }

    #[test]
    fn random_models_are_seeded_and_at_least_one_ns() {
        let models = [
            LatencyModel::Fixed(0),
            LatencyModel::Uniform { lo_ns: 0, hi_ns: 2 },
            LatencyModel::Exponential { mean_ns: 10_000 },
            LatencyModel::LogNormal {
                median_ns: 10_000,
                sigma: 0.5,
            },
            LatencyModel::Samples(vec![0, 5]),
        ];
        for m in &models {
            m.validate().unwrap();
            let mut a = SmallRng::seed_from_u64(3);
            let mut b = SmallRng::seed_from_u64(3);
            let xs: Vec<u64> = (0..2000).map(|i| m.sample(&mut a, i)).collect();
            let ys: Vec<u64> = (0..2000).map(|i| m.sample(&mut b, i)).collect();
            assert_eq!(xs, ys, "{m:?}");
            assert!(xs.iter().all(|&x| x >= 1), "{m:?}");
        }
        // Rough shape checks on the random ones.
        let mut rng = SmallRng::seed_from_u64(4);
        let n = 20_000u64;
        let mean = |m: &LatencyModel, rng: &mut SmallRng| {
            (0..n).map(|i| m.sample(rng, i)).sum::<u64>() as f64 / n as f64
        };
        let exp = mean(&LatencyModel::Exponential { mean_ns: 10_000 }, &mut rng);
        assert!((9_500.0..10_500.0).contains(&exp), "{exp}");
        let uni = mean(
            &LatencyModel::Uniform {
                lo_ns: 1_000,
                hi_ns: 3_000,
            },
            &mut rng,
        );
        assert!((1_950.0..2_050.0).contains(&uni), "{uni}");
        let ln = LatencyModel::LogNormal {
            median_ns: 10_000,
            sigma: 1.0,
        };
        let below = (0..n).filter(|&i| ln.sample(&mut rng, i) < 10_000).count() as f64;
        assert!((0.48..0.52).contains(&(below / n as f64)), "{below}");
    }

    #[test]
    fn model_specs_parse_and_print_the_same_grammar() {
        let m = LatencyModel::parse_list("fixed:80us; samples:1,2ms,3;uniform:1:2").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], LatencyModel::Fixed(80_000));
        assert_eq!(m[1], LatencyModel::Samples(vec![1, 2_000_000, 3]));
        for x in &m {
            assert_eq!(&x.to_string().parse::<LatencyModel>().unwrap(), x);
        }
        let ln: LatencyModel = "lognormal:1ms:0.5".parse().unwrap();
        assert_eq!(ln.to_string().parse::<LatencyModel>().unwrap(), ln);
        assert!("gauss:1".parse::<LatencyModel>().is_err());
        assert!("fixed:x".parse::<LatencyModel>().is_err());
        assert!("uniform:5:1".parse::<LatencyModel>().is_err());
        assert!(LatencyModel::parse_list("").is_err());
    }

    #[test]
    fn invalid_models_are_rejected_at_construction() {
        for m in [
            LatencyModel::Uniform { lo_ns: 5, hi_ns: 1 },
            LatencyModel::LogNormal {
                median_ns: 1,
                sigma: f64::NAN,
            },
            LatencyModel::Samples(vec![]),
        ] {
            assert!(NullEngine::with_latency(P, 0, vec![(m, 0)], VirtualClock::new()).is_err());
        }
        assert!(NullEngine::with_latency(P, 0, vec![], VirtualClock::new()).is_err());
        {}
    }
}
