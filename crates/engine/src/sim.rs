//! The `sim` engine: a simulated device per disk, so sweeps, searches for the highest
//! rate under a latency objective and capacity questions can be tried without hardware
//! and tested deterministically.
//!
//! Each disk is a queue in front of `servers` identical servers (the device's internal
//! parallelism), served first come, first served. An I/O's service time is drawn from
//! `dist` with mean (fixed, exp) or median (lognormal) `service`, plus, with `max_mbps`,
//! its transfer time on a server's share of that bandwidth (`len × servers / max_mbps`),
//! so that all servers together move at most `max_mbps`. An I/O queued at time *t*
//! starts when a server is free and completes after its service time: with Poisson
//! arrivals and exponential service this is the M/M/c queue, whose latency rises with
//! load the way a real device's does (see `docs/capacity.md`). Every lane driving a disk
//! shares its device (the placement keeps a disk's lanes on one I/O thread).
//!
//! By default time is simulated: the engine's clock jumps to the next completion, so a
//! 60 s step takes a fraction of a second and is repeatable for a seed. With
//! `clock=real` (`--real-time`) the same model runs on the wall clock, and the engine
//! sleeps until each completion is due. No byte is moved.
//!
//! A device can *drift* (`drift=P%,settle=T`): its service times start at (1 + P/100)
//! times `service` and move linearly to `service` by `settle` of the device's time,
//! then stay; `settle=never,ramp=T` keeps them moving at the rate of P% of `service`
//! per `ramp`, without end. That is the freshly-written SSD whose rate changes until
//! it settles, which the steady-state rule (`--steady-state`) must detect. `age=T` is
//! how long the device has already served: steady-state rounds are separate runs, and
//! each round's device carries on where the previous one left off.
//!
//! A device can be *shared* (`shared=NAME`): every disk of every engine on this machine
//! that names the same device passes through ONE queue of `servers` servers — the
//! agents of one `iofleet agent --agents N` process or of several processes, or the I/O
//! threads of a local run. That is the storage many clients load together, whose
//! latency rises with the number of clients (`docs/fleet.md`, "Fleet size as a sweep
//! dimension"); `crate::mmc` is its analytic model. A shared device runs on the wall
//! clock only (`clock=real`, or `--real-time`): simulated time is each engine's own,
//! jumping to its next completion, and several engines cannot share one queue in it.
//! Its servers' next free times are atomics in a file of /dev/shm (`crate::sim_shared`),
//! taken by compare-and-swap, so no lock is held per I/O.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::buf::BufferPool;
use crate::null::{parse_ns, reap_due, Due, LatencyModel};
pub use crate::sim_shared::SharedQueue;
use crate::{Caps, Clock, Completion, Engine, EngineError, EngineParams, IoReq};

/// Service-time distribution of a simulated device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServiceDist {
    Fixed,
    Exp,
    /// Log-normal with this shape (standard deviation of ln).
    LogNormal {
        sigma: f64,
    },
}

/// When a drifting device stops drifting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Settle {
    /// Service times reach `service` after this many ns of device time, then stay.
    At(u64),
    /// Service times keep moving by the drift's share of `service` every `ramp_ns`.
    Never { ramp_ns: u64 },
}

/// Service times that start away from `service` and move linearly towards it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Where service times start, percent of `service` above it (negative: below).
    pub pct: f64,
    pub settle: Settle,
}

impl Drift {
    /// The factor applied to `service` at `t_ns` of device time. Never below 1% of
    /// `service` (a drift that keeps shortening service times would reach zero).
    pub fn factor(&self, t_ns: u64) -> f64 {
        let d = self.pct / 100.0;
        let f = match self.settle {
            Settle::At(settle) if t_ns >= settle => 1.0,
            Settle::At(settle) => 1.0 + d * (1.0 - t_ns as f64 / settle as f64),
            Settle::Never { ramp_ns } => 1.0 + d * (1.0 - t_ns as f64 / ramp_ns as f64),
        };
        f.max(0.01)
    }
}

/// The device every disk of a `sim` run is.
#[derive(Debug, Clone, PartialEq)]
pub struct SimDevice {
    pub servers: u32,
    /// Mean (fixed, exp) or median (lognormal) service time, ns.
    pub service_ns: u64,
    pub dist: ServiceDist,
    /// Bandwidth of the whole device, MB/s (10^6 bytes per second).
    pub max_mbps: Option<f64>,
    /// Run on the wall clock instead of in simulated time.
    pub real_time: bool,
    /// Service times that drift, then settle (or never do).
    pub drift: Option<Drift>,
    /// Device time already served when the run starts, ns (where a drift stands).
    pub age_ns: u64,
    /// The name of the one device every engine of this process naming it shares
    /// (`shared=NAME`); None: a device per disk.
    pub shared: Option<String>,
}

/// Most servers a shared device may have: each I/O looks at every server's next free
/// time to take the earliest.
pub const MAX_SHARED_SERVERS: u32 = 1024;

impl Default for SimDevice {
    fn default() -> Self {
        SimDevice {
            servers: 8,
            service_ns: 200_000,
            dist: ServiceDist::Exp,
            max_mbps: None,
            real_time: false,
            drift: None,
            age_ns: 0,
            shared: None,
        }
    }
}

impl SimDevice {
    fn model(&self) -> LatencyModel {
        match self.dist {
            ServiceDist::Fixed => LatencyModel::Fixed(self.service_ns),
            ServiceDist::Exp => LatencyModel::Exponential {
                mean_ns: self.service_ns,
            },
            ServiceDist::LogNormal { sigma } => LatencyModel::LogNormal {
                median_ns: self.service_ns,
                sigma,
            },
        }
    }

    /// Transfer time of `len` bytes on one server's share of the bandwidth, ns.
    fn transfer_ns(&self, len: u32) -> u64 {
        self.max_mbps.map_or(0, |m| {
            (len as f64 * self.servers as f64 / (m * 1e6) * 1e9).round() as u64
        })
    }

    /// The most this device completes per second at block size `bs` (every server busy),
    /// using the mean service time.
    pub fn max_iops(&self, bs: u32) -> f64 {
        let mean = match self.dist {
            ServiceDist::Fixed | ServiceDist::Exp => self.service_ns as f64,
            ServiceDist::LogNormal { sigma } => {
                self.service_ns as f64 * (sigma * sigma / 2.0).exp()
            }
        };
        self.servers as f64 * 1e9 / (mean + self.transfer_ns(bs) as f64)
    }

    /// What makes this device unusable as it is set: a shared device in simulated time.
    pub fn check(&self) -> Result<(), String> {
        match &self.shared {
            Some(name) if !self.real_time => Err(format!(
                "sim: shared={name} runs on the wall clock only (simulated time is each engine's own, and several engines cannot share one queue in it): add clock=real to the device, or --real-time"
            )),
            _ => Ok(()),
        }
    }
}

/// What the grammar refuses of a shared device: simulated time asked for explicitly
/// (`clock=sim`; without `clock`, `--real-time` may still set it: `SimDevice::check`),
/// and more than [`MAX_SHARED_SERVERS`] servers.
fn check_shared(d: &SimDevice, clock_given: bool) -> Result<(), String> {
    if d.shared.is_none() {
        return Ok(());
    }
    if clock_given {
        d.check()?;
    }
    if d.servers > MAX_SHARED_SERVERS {
        return Err(format!(
            "sim: a shared device has at most {MAX_SHARED_SERVERS} servers, not {}",
            d.servers
        ));
    }
    Ok(())
}

/// A shared device's name: 1 to 64 of `A-Z a-z 0-9 _ . -`.
fn parse_shared_name(v: &str) -> Result<String, String> {
    let ok = !v.is_empty()
        && v.len() <= 64
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    match ok {
        true => Ok(v.to_string()),
        false => Err(format!(
            "sim: shared names a device with 1 to 64 letters, digits, '_', '.' or '-', not '{v}'"
        )),
    }
}

/// A time span: ns, or with `ns`, `us`, `ms` or `s`.
fn parse_span_ns(v: &str) -> Result<u64, String> {
    match v.trim().strip_suffix('s') {
        Some(n) if !n.ends_with(['m', 'u', 'n']) => {
            let secs: f64 = n
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("'{v}' is not a time (examples: 500us, 2ms, 30s)"))?;
            Ok((secs * 1e9).round() as u64)
        }
        _ => parse_ns(v),
    }
}

/// `drift=±P%`: percent above (below) `service` where service times start.
fn parse_drift_pct(v: &str) -> Result<f64, String> {
    let bad =
        || format!("sim: drift must be a percentage above -100%, e.g. +100% or -50%, not '{v}'");
    let n = v.trim().strip_suffix('%').ok_or_else(bad)?;
    let n = n.strip_prefix('+').unwrap_or(n);
    n.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > -100.0)
        .ok_or_else(bad)
}

/// `servers=N,service=T,dist=fixed|exp|lognormal,sigma=S,max_mbps=M,clock=sim|real`,
/// `drift=±P%,settle=T|never,ramp=T`, `age=T` and `shared=NAME`, every key optional
/// (defaults: 8 servers, 200us, exp, no bandwidth limit, simulated time, no drift, age
/// 0, a device per disk).
impl FromStr for SimDevice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut d = SimDevice::default();
        let mut dist = "exp";
        let mut sigma: Option<f64> = None;
        let mut drift: Option<f64> = None;
        // None: not given; Some(None): never.
        let mut settle: Option<Option<u64>> = None;
        let mut ramp: Option<u64> = None;
        let mut clock_given = false;
        for kv in s.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("sim: '{kv}' is not KEY=VALUE"))?;
            let num = |v: &str| -> Result<f64, String> {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| format!("sim: {k} must be a number above 0, not '{v}'"))
            };
            match k {
                "servers" => {
                    d.servers = v
                        .parse()
                        .ok()
                        .filter(|&n: &u32| (1..=65_536).contains(&n))
                        .ok_or_else(|| format!("sim: servers must be 1 to 65536, not '{v}'"))?
                }
                "service" => {
                    d.service_ns = parse_ns(v).map_err(|e| format!("sim: service: {e}"))?;
                    if d.service_ns == 0 {
                        return Err("sim: service must be above 0".into());
                    }
                }
                "dist" => dist = v,
                "drift" => drift = Some(parse_drift_pct(v)?),
                "settle" => {
                    settle = Some(match v {
                        "never" => None,
                        _ => Some(
                            parse_span_ns(v)
                                .ok()
                                .filter(|&t| t > 0)
                                .ok_or_else(|| {
                                    format!("sim: settle must be a time above 0 (e.g. 30s) or never, not '{v}'")
                                })?,
                        ),
                    })
                }
                "ramp" => {
                    ramp = Some(parse_span_ns(v).ok().filter(|&t| t > 0).ok_or_else(|| {
                        format!("sim: ramp must be a time above 0 (e.g. 10s), not '{v}'")
                    })?)
                }
                "age" => d.age_ns = parse_span_ns(v).map_err(|e| format!("sim: age: {e}"))?,
                "sigma" => sigma = Some(num(v)?),
                "max_mbps" => d.max_mbps = Some(num(v)?),
                "shared" => d.shared = Some(parse_shared_name(v)?),
                "clock" => {
                    clock_given = true;
                    d.real_time = match v {
                        "sim" => false,
                        "real" => true,
                        _ => return Err(format!("sim: clock is sim or real, not '{v}'")),
                    }
                }
                _ => {
                    return Err(format!(
                        "sim: unknown key '{k}' (servers, service, dist, sigma, max_mbps, clock, drift, settle, ramp, age, shared)"
                    ))
                }
            }
        }
        check_shared(&d, clock_given)?;
        d.drift = match (drift, settle, ramp) {
            (None, None, None) => None,
            (None, _, _) => return Err("sim: settle and ramp go with drift=P% only".into()),
            (Some(_), None, _) => {
                return Err("sim: drift needs settle=T (e.g. settle=30s) or settle=never".into())
            }
            (Some(pct), Some(Some(t)), None) => Some(Drift {
                pct,
                settle: Settle::At(t),
            }),
            (Some(_), Some(Some(_)), Some(_)) => {
                return Err("sim: ramp goes with settle=never only (settle=T sets the ramp)".into())
            }
            (Some(pct), Some(None), Some(ramp_ns)) => Some(Drift {
                pct,
                settle: Settle::Never { ramp_ns },
            }),
            (Some(_), Some(None), None) => {
                return Err(
                    "sim: settle=never needs ramp=T, the time service moves by the drift (e.g. ramp=10s)"
                        .into(),
                )
            }
        };
        d.dist = match (dist, sigma) {
            ("fixed", None) => ServiceDist::Fixed,
            ("exp", None) => ServiceDist::Exp,
            ("lognormal", s) => ServiceDist::LogNormal {
                sigma: s.unwrap_or(0.5),
            },
            ("fixed" | "exp", Some(_)) => {
                return Err("sim: sigma goes with dist=lognormal only".into())
            }
            (other, _) => {
                return Err(format!(
                    "sim: dist is fixed, exp or lognormal, not '{other}'"
                ))
            }
        };
        Ok(d)
    }
}

/// The `FromStr` grammar with every key, so a device survives the wire unchanged.
impl fmt::Display for SimDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "servers={},service={}ns", self.servers, self.service_ns)?;
        match self.dist {
            ServiceDist::Fixed => f.write_str(",dist=fixed")?,
            ServiceDist::Exp => f.write_str(",dist=exp")?,
            ServiceDist::LogNormal { sigma } => write!(f, ",dist=lognormal,sigma={sigma}")?,
        }
        if let Some(m) = self.max_mbps {
            write!(f, ",max_mbps={m}")?;
        }
        if self.real_time {
            f.write_str(",clock=real")?;
        }
        if let Some(drift) = self.drift {
            write!(f, ",drift={:+}%", drift.pct)?;
            match drift.settle {
                Settle::At(t) => write!(f, ",settle={t}ns")?,
                Settle::Never { ramp_ns } => write!(f, ",settle=never,ramp={ramp_ns}ns")?,
            }
        }
        if self.age_ns > 0 {
            write!(f, ",age={}ns", self.age_ns)?;
        }
        if let Some(name) = &self.shared {
            write!(f, ",shared={name}")?;
        }
        Ok(())
    }
}

/// One disk's device: when each server is next free, and its service-time source.
#[derive(Debug)]
struct DiskQueue {
    /// Min-heap of the servers' next free times (ns); always `servers` entries.
    free: BinaryHeap<Reverse<u64>>,
    rng: SmallRng,
    seq: u64,
}

/// A simulated device per file (or one shared device), on clock `C` (simulated or real
/// time).
#[derive(Debug)]
pub struct SimEngine<C: Clock> {
    pool: BufferPool,
    device: SimDevice,
    model: LatencyModel,
    disks: Vec<DiskQueue>,
    clock: C,
    in_flight: BinaryHeap<Due>,
    seq: u64,
    /// The device every disk passes through, when shared (`shared=NAME`).
    shared: Option<Arc<SharedQueue>>,
}

impl<C: Clock> SimEngine<C> {
    /// One simulated device per entry of `disk_seeds` (its service-time seed).
    pub fn new(
        device: SimDevice,
        params: EngineParams,
        seed: u64,
        disk_seeds: &[u64],
        clock: C,
    ) -> Result<Self, EngineError> {
        if disk_seeds.is_empty() {
            return Err(EngineError::Setup("sim: no disk to simulate".into()));
        }
        let model = device.model();
        model.validate()?;
        device.check().map_err(EngineError::Setup)?;
        let shared = match &device.shared {
            Some(name) => Some(SharedQueue::named(
                name,
                &device.to_string(),
                device.servers,
            )?),
            None => None,
        };
        let disks = disk_seeds
            .iter()
            .map(|&s| DiskQueue {
                free: (0..device.servers).map(|_| Reverse(0)).collect(),
                rng: SmallRng::seed_from_u64(s),
                seq: 0,
            })
            .collect();
        Ok(SimEngine {
            pool: BufferPool::new(params.slots, params.max_bs, seed)?,
            device,
            model,
            disks,
            clock,
            in_flight: BinaryHeap::with_capacity(params.slots as usize),
            seq: 0,
            shared,
        })
    }

    /// The engine's clock (the loop must use the same one).
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }
}

impl<C: Clock> Engine for SimEngine<C> {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn caps(&self) -> Caps {
        Caps {
            async_qd: true,
            needs_target: false,
            registered_buffers: false,
            registered_files: false,
            simulated_time: !self.device.real_time,
            device_per_disk: true,
        }
    }

    fn queue(&mut self, req: IoReq) -> Result<(), EngineError> {
        self.pool.check_req(&req)?;
        let n = self.disks.len();
        let Some(d) = self.disks.get_mut(req.file as usize) else {
            return Err(crate::bad_file(&req, n));
        };
        let now = self.clock.now_ns();
        let drawn = self.model.sample(&mut d.rng, d.seq);
        d.seq += 1;
        let (device, len) = (&self.device, req.len);
        // The service time of the moment this I/O starts being served (`start` in the
        // device's time, which a drift follows).
        let service = |start: u64| {
            let drawn = match &device.drift {
                Some(drift) => {
                    let f = drift.factor(device.age_ns.saturating_add(start));
                    (drawn as f64 * f).round() as u64
                }
                None => drawn,
            };
            drawn + device.transfer_ns(len)
        };
        let done = match &self.shared {
            Some(q) => {
                // The queue's clock is the process's, this engine's its run's: the
                // completion lies as far ahead on both.
                let q_now = SharedQueue::now_ns();
                let (_, q_done) = q.serve(q_now, service);
                now.saturating_add(q_done - q_now)
            }
            None => {
                let Reverse(free) = d.free.pop().expect("a device has at least one server");
                let start = free.max(now);
                let done = start.saturating_add(service(start));
                d.free.push(Reverse(done));
                done
            }
        };
        self.in_flight
            .push(Reverse((done, self.seq, req.slot, req.len as i32)));
        self.seq += 1;
        Ok(())
    }

    /// Completes what is due; with fewer than `min_complete` due, time passes (jumps, or
    /// sleeps on the wall clock) until enough are, or until `timeout`.
    fn submit_and_reap(
        &mut self,
        min_complete: u32,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<(), EngineError> {
        reap_due(&mut self.in_flight, &self.clock, min_complete, timeout, out);
        Ok(())
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slot_mut(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VirtualClock;

    fn engine(spec: &str, disks: usize, slots: u32) -> (SimEngine<VirtualClock>, VirtualClock) {
        let clock = VirtualClock::new();
        let seeds: Vec<u64> = (0..disks as u64).collect();
        let e = SimEngine::new(
            spec.parse().unwrap(),
            EngineParams {
                slots,
                max_bs: 65536,
            },
            1,
            &seeds,
            clock.clone(),
        )
        .unwrap();
        (e, clock)
    }

    fn req(slot: u32, file: u32, len: u32) -> IoReq {
        IoReq {
            slot,
            file,
            op: crate::OpKind::Read,
            offset: 0,
            len,
        }
    }

    #[test]
    fn grammar_round_trips_and_names_the_bad_key() {
        for s in [
            "servers=8,service=200000ns,dist=exp",
            "servers=1,service=1000ns,dist=fixed,max_mbps=500",
            "servers=4,service=80000ns,dist=lognormal,sigma=0.3,clock=real",
            "servers=8,service=200000ns,dist=fixed,drift=+100%,settle=30000000000ns",
            "servers=8,service=200000ns,dist=exp,drift=-50%,settle=never,ramp=1000000000ns,age=5000ns",
            "servers=2,service=500000ns,dist=exp,clock=real,shared=array-1",
        ] {
            let d: SimDevice = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
        let d: SimDevice = "servers=2,service=1ms".parse().unwrap();
        assert_eq!((d.servers, d.service_ns), (2, 1_000_000));
        assert_eq!("".parse::<SimDevice>().unwrap(), SimDevice::default());
        for (bad, names) in [
            ("servers=0", "servers"),
            ("service=0", "service"),
            ("service=fast", "service"),
            ("dist=gauss", "dist"),
            ("dist=exp,sigma=1", "sigma"),
            ("max_mbps=-1", "max_mbps"),
            ("clock=fast", "clock"),
            ("speed=1", "speed"),
            ("servers", "KEY=VALUE"),
            ("drift=100", "drift"),
            ("drift=-100%", "drift"),
            ("drift=+50%", "settle=T"),
            ("settle=30s", "drift=P%"),
            ("drift=+50%,settle=0s", "settle"),
            ("drift=+50%,settle=soon", "settle"),
            ("drift=+50%,settle=never", "ramp=T"),
            ("drift=+50%,settle=10s,ramp=1s", "settle=never only"),
            ("drift=+50%,settle=never,ramp=0", "ramp"),
            ("age=old", "age"),
            ("shared=", "shared"),
            ("shared=a/b", "shared"),
            ("shared=a,clock=sim", "wall clock"),
            ("clock=sim,shared=a", "wall clock"),
            ("shared=a,clock=real,servers=2000", "at most 1024"),
        ] {
            let e = bad.parse::<SimDevice>().unwrap_err();
            assert!(e.contains(names), "{bad}: {e}");
        }
    }

    #[test]
    fn a_shared_device_needs_the_wall_clock() {
        // Without a clock it parses (--real-time may still set it), but cannot be built.
        let d: SimDevice = "shared=x".parse().unwrap();
        assert!(d.check().unwrap_err().contains("clock=real"));
        let e = SimEngine::new(
            d,
            EngineParams {
                slots: 1,
                max_bs: 4096,
            },
            1,
            &[0],
            crate::VirtualClock::new(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("wall clock"), "{e}");
    }

    #[test]
    fn engines_naming_one_shared_device_get_the_same_queue() {
        // Named by this process, so that another run of the tests meanwhile is not
        // this device; its files removed at the end.
        let pid = std::process::id();
        let spec = |s: &str, name: &str| format!("{s},clock=real,shared=unit-test-{name}-{pid}");
        let d: SimDevice = spec("servers=1,service=1ms", "a").parse().unwrap();
        let d_a = d.clone();
        let name = format!("unit-test-a-{pid}");
        let named = |d: &SimDevice| SharedQueue::named(&name, &d.to_string(), d.servers);
        let a = named(&d).unwrap();
        let b = named(&d).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let other: SimDevice = spec("servers=2,service=1ms", "a").parse().unwrap();
        let e = named(&other).unwrap_err();
        assert!(e.to_string().contains("already in use"), "{e}");
        // Two engines of one device: an I/O of the second waits for the first's.
        let params = EngineParams {
            slots: 1,
            max_bs: 4096,
        };
        let d: SimDevice = spec("servers=1,service=50ms,dist=fixed", "b")
            .parse()
            .unwrap();
        let d_b = d.clone();
        let clock = crate::MonoClock::new(std::time::Instant::now());
        let mut one = SimEngine::new(d.clone(), params, 1, &[0], clock).unwrap();
        let mut two = SimEngine::new(d, params, 2, &[1], clock).unwrap();
        one.queue(req(0, 0, 4096)).unwrap();
        two.queue(req(0, 0, 4096)).unwrap();
        let due = |e: &SimEngine<crate::MonoClock>| e.in_flight.peek().map(|Reverse(d)| d.0);
        let (a, b) = (due(&one).unwrap(), due(&two).unwrap());
        // The second completes a service time after the first, not beside it (half of
        // one allows for the moments between reading the two clocks).
        assert!(b > a + 25_000_000, "{a} {b}");
        for d in [&d_a, &d_b] {
            let name = d.shared.as_deref().unwrap();
            std::fs::remove_file(crate::sim_shared::path_of(name, &d.to_string())).unwrap();
        }
    }

    #[test]
    fn drift_grammar_reads_seconds_and_signs() {
        let d: SimDevice = "drift=+100%,settle=30s,age=2s".parse().unwrap();
        assert_eq!(
            d.drift,
            Some(Drift {
                pct: 100.0,
                settle: Settle::At(30_000_000_000)
            })
        );
        assert_eq!(d.age_ns, 2_000_000_000);
        let d: SimDevice = "drift=-50%,settle=never,ramp=250ms".parse().unwrap();
        assert_eq!(
            d.drift,
            Some(Drift {
                pct: -50.0,
                settle: Settle::Never {
                    ramp_ns: 250_000_000
                }
            })
        );
    }

    #[test]
    fn drift_factor_moves_linearly_then_settles_or_keeps_going() {
        let settles = Drift {
            pct: 100.0,
            settle: Settle::At(1_000),
        };
        assert_eq!(settles.factor(0), 2.0);
        assert_eq!(settles.factor(250), 1.75);
        assert_eq!(settles.factor(1_000), 1.0);
        assert_eq!(settles.factor(5_000), 1.0);
        let slows = Drift {
            pct: -50.0,
            settle: Settle::Never { ramp_ns: 1_000 },
        };
        assert_eq!(slows.factor(0), 0.5);
        assert_eq!(slows.factor(1_000), 1.0);
        assert_eq!(slows.factor(3_000), 2.0);
        let speeds = Drift {
            pct: 100.0,
            settle: Settle::Never { ramp_ns: 1_000 },
        };
        assert_eq!(speeds.factor(10_000), 0.01, "never below 1% of service");
    }

    #[test]
    fn drifting_service_follows_device_time_and_age() {
        // One fixed server of 100 µs that starts at 2× and settles after 1 ms.
        let (mut e, clock) = engine(
            "servers=1,service=100us,dist=fixed,drift=+100%,settle=1ms",
            1,
            1,
        );
        let mut out = Vec::new();
        let mut done_at = vec![];
        for _ in 0..8 {
            e.queue(req(0, 0, 4096)).unwrap();
            e.submit_and_reap(1, None, &mut out).unwrap();
            done_at.push(clock.now_ns());
        }
        // Each I/O takes 100 µs × (2 − start/1 ms): starting at 0 it takes 200 µs, at
        // 200 µs 180, at 380 µs 162, at 542 µs 145.8, at 687.8 µs 131.22, ...; from
        // 1 ms on, 100.
        assert_eq!(
            done_at,
            vec![200_000, 380_000, 542_000, 687_800, 819_020, 937_118, 1_043_406, 1_143_406]
        );
        // A device 1 ms old has settled already.
        let (mut e, clock) = engine(
            "servers=1,service=100us,dist=fixed,drift=+100%,settle=1ms,age=1ms",
            1,
            1,
        );
        e.queue(req(0, 0, 4096)).unwrap();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(clock.now_ns(), 100_000);
    }

    #[test]
    fn servers_serve_in_parallel_then_queue() {
        // Two servers, 100 µs each: two I/Os finish at 100 µs, the third waits for one.
        let (mut e, clock) = engine("servers=2,service=100us,dist=fixed", 1, 3);
        for slot in 0..3 {
            e.queue(req(slot, 0, 4096)).unwrap();
        }
        let mut out = Vec::new();
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(clock.now_ns(), 100_000);
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(clock.now_ns(), 200_000);
    }

    #[test]
    fn disks_are_separate_devices_and_bandwidth_adds_transfer_time() {
        // One server each: I/Os to two disks run side by side.
        let (mut e, clock) = engine("servers=1,service=50us,dist=fixed", 2, 2);
        e.queue(req(0, 0, 4096)).unwrap();
        e.queue(req(1, 1, 4096)).unwrap();
        let mut out = Vec::new();
        e.submit_and_reap(2, None, &mut out).unwrap();
        assert_eq!(clock.now_ns(), 50_000);
        // 2 servers sharing 100 MB/s: 64 KB takes 2 × 655.36 µs on top of the service.
        let (mut e, clock) = engine("servers=2,service=50us,dist=fixed,max_mbps=100", 1, 1);
        e.queue(req(0, 0, 65536)).unwrap();
        e.submit_and_reap(1, None, &mut out).unwrap();
        assert_eq!(clock.now_ns(), 50_000 + 1_310_720);
        assert!(e.queue(req(0, 2, 512)).is_err(), "no third disk");
    }

    #[test]
    fn mm1_latency_matches_theory_under_poisson_load() {
        // M/M/1 at 50% load: mean time in system = S / (1 - rho) = 2 S.
        let (mut e, clock) = engine("servers=1,service=100us,dist=exp", 1, 4096);
        let mut rng = SmallRng::seed_from_u64(7);
        let arrivals = LatencyModel::Exponential { mean_ns: 200_000 };
        let n = 50_000u64;
        let mut issued_at = vec![0u64; 4096];
        let mut free: Vec<u32> = (0..4096).collect();
        let (mut t, mut sum, mut done) = (0u64, 0u128, 0u64);
        let mut out = Vec::new();
        for i in 0..n {
            t += arrivals.sample(&mut rng, i);
            // Complete everything due before the next arrival.
            loop {
                out.clear();
                e.submit_and_reap(1, Some(Duration::from_nanos(t - clock.now_ns())), &mut out)
                    .unwrap();
                for c in &out {
                    sum += (clock.now_ns() - issued_at[c.slot as usize]) as u128;
                    done += 1;
                    free.push(c.slot);
                }
                if clock.now_ns() >= t {
                    break;
                }
            }
            let slot = free.pop().expect("fewer than 4096 in flight");
            issued_at[slot as usize] = t;
            e.queue(req(slot, 0, 4096)).unwrap();
        }
        let mean_us = sum as f64 / done as f64 / 1000.0;
        assert!(
            (190.0..210.0).contains(&mean_us),
            "M/M/1 at rho 0.5: {mean_us} µs"
        );
    }
}
