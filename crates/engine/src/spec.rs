//! `EngineSpec`: the one way an engine is named, from the command line through the
//! results to the agent protocol. It parses (`FromStr`) and prints (`Display`) one
//! grammar, serialises as that same string, declares each engine's capabilities, turns
//! `auto` into a concrete engine on this host (`resolve`), and builds an engine for one
//! I/O thread (`build`). The core reads `caps()`, never the variant.
//!
//! Grammar: `auto`, `io_uring` (alias `uring`), `psync`, `null`, and
//! `null-sim:MODELS` — the null engine completing I/Os after injected latencies in
//! simulated time, `MODELS` being `LatencyModel`s separated by `;` (worker i uses model
//! i mod n) — and `sim:KEY=VALUE,…`, a simulated device per disk (`SimDevice`). This module does not decide how many threads run or what they issue.

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::null::{LatencyModel, NullEngine};
use crate::psync::PsyncEngine;
use crate::sim::{SimDevice, SimEngine};
use crate::uring::{self, UringEngine};
use crate::{Caps, Clock, Engine, EngineError, EngineParams, MonoClock, OpenDisk, VirtualClock};

/// An engine as the user names it (possibly `Auto`) or as a host resolved it.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineSpec {
    /// io_uring where the kernel allows it, else psync (with one notice).
    Auto,
    Uring,
    Psync,
    /// Completes every I/O at once without touching storage.
    Null,
    /// The null engine with injected latencies, in simulated time.
    NullSim(Vec<LatencyModel>),
    /// A simulated device per disk (queueing, servers, bandwidth).
    Sim(SimDevice),
}

impl EngineSpec {
    /// The short name shown in results (`run.engine`).
    pub fn name(&self) -> &'static str {
        match self {
            EngineSpec::Auto => "auto",
            EngineSpec::Uring => "io_uring",
            EngineSpec::Psync => "psync",
            EngineSpec::Null => "null",
            EngineSpec::NullSim(_) => "null-sim",
            EngineSpec::Sim(_) => "sim",
        }
    }

    /// What this engine can do. `Auto` answers for io_uring, what it resolves to on
    /// any kernel that has it; call `resolve` first where the difference matters.
    pub fn caps(&self) -> Caps {
        let base = Caps {
            async_qd: true,
            needs_target: false,
            registered_buffers: false,
            registered_files: false,
            simulated_time: false,
            device_per_disk: false,
        };
        match self {
            EngineSpec::Auto | EngineSpec::Uring => Caps {
                needs_target: true,
                registered_buffers: true,
                registered_files: true,
                ..base
            },
            EngineSpec::Psync => Caps {
                async_qd: false,
                needs_target: true,
                ..base
            },
            EngineSpec::Null => base,
            EngineSpec::NullSim(_) => Caps {
                simulated_time: true,
                ..base
            },
            EngineSpec::Sim(d) => Caps {
                simulated_time: !d.real_time,
                device_per_disk: true,
                ..base
            },
        }
    }

    /// A concrete engine for this host: `Auto` becomes io_uring when the kernel allows
    /// it, else psync (with a notice saying why); an explicit `io_uring` that cannot
    /// run is an error. Every other spec is returned as it is.
    pub fn resolve(&self, notices: &mut Vec<String>) -> Result<EngineSpec, EngineError> {
        match self {
            EngineSpec::Auto => match uring::probe() {
                Ok(()) => Ok(EngineSpec::Uring),
                Err(e) => {
                    let why = match e {
                        EngineError::UringUnavailable(why) => why,
                        e => e.to_string(),
                    };
                    notices.push(format!("io_uring is not usable here ({why}); using psync"));
                    Ok(EngineSpec::Psync)
                }
            },
            EngineSpec::Uring => uring::probe().map(|()| EngineSpec::Uring),
            other => Ok(other.clone()),
        }
    }

    /// `resolve`, then, for `Auto` on a directory target, the per-target check: where
    /// io_uring would hand every I/O to kernel workers (no non-blocking reads on that
    /// filesystem), psync is used instead, with a notice saying why.
    pub fn resolve_for_dir(
        &self,
        dir: Option<&std::path::Path>,
        direct: bool,
        notices: &mut Vec<String>,
    ) -> Result<EngineSpec, EngineError> {
        let resolved = self.resolve(notices)?;
        if *self == EngineSpec::Auto && resolved == EngineSpec::Uring {
            if let Some(d) = dir {
                if uring::completes_inline_in(d, direct) == Some(false) {
                    notices.push(format!(
                        "engine auto: {} has no non-blocking reads (tmpfs, for example), so io_uring would hand every I/O to a kernel worker thread; using psync, which is faster there (--engine io_uring to insist)",
                        d.display()
                    ));
                    return Ok(EngineSpec::Psync);
                }
            }
        }
        Ok(resolved)
    }

    /// Build the engine of one I/O thread over `files` (`IoReq::file` indexes them).
    /// Every file needs an opened disk when `caps().needs_target`; its worker picks the
    /// latency model of `NullSim`. `Auto` must be resolved first.
    pub fn build(
        &self,
        files: Vec<EngineFile>,
        params: EngineParams,
        seed: u64,
    ) -> Result<BuiltEngine, EngineError> {
        let workers: Vec<(u32, u64)> = files.iter().map(|f| (f.worker, f.seed)).collect();
        let disks = || {
            files
                .into_iter()
                .map(|f| f.disk)
                .collect::<Option<Vec<OpenDisk>>>()
                .filter(|d| !d.is_empty())
                .ok_or_else(|| EngineError::Setup("this engine needs a target".into()))
        };
        Ok(match self {
            EngineSpec::Auto => {
                return Err(EngineError::Setup(
                    "engine 'auto' must be resolved before it is built".into(),
                ))
            }
            EngineSpec::Uring => BuiltEngine::Uring(UringEngine::new(disks()?, params, seed)?),
            EngineSpec::Psync => BuiltEngine::Psync(PsyncEngine::new(disks()?, params, seed)?),
            EngineSpec::Null => BuiltEngine::Null(NullEngine::new(params, seed)?),
            EngineSpec::NullSim(models) => {
                if models.is_empty() {
                    return Err(EngineError::Setup("null-sim needs a latency model".into()));
                }
                let per_file = workers
                    .iter()
                    .map(|&(w, seed)| (models[w as usize % models.len()].clone(), seed))
                    .collect();
                let clock = VirtualClock::new();
                let e = NullEngine::with_latency(params, seed, per_file, clock.clone())?;
                BuiltEngine::Sim(e, clock)
            }
            EngineSpec::Sim(device) => {
                let seeds: Vec<u64> = workers.iter().map(|&(_, s)| s).collect();
                if device.real_time {
                    let clock = MonoClock::new(Instant::now());
                    BuiltEngine::DeviceReal(SimEngine::new(
                        device.clone(),
                        params,
                        seed,
                        &seeds,
                        clock,
                    )?)
                } else {
                    let clock = VirtualClock::new();
                    let e = SimEngine::new(device.clone(), params, seed, &seeds, clock.clone())?;
                    BuiltEngine::Device(e, clock)
                }
            }
        })
    }
}

impl fmt::Display for EngineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineSpec::NullSim(models) => {
                f.write_str("null-sim:")?;
                for (i, m) in models.iter().enumerate() {
                    if i > 0 {
                        f.write_str(";")?;
                    }
                    write!(f, "{m}")?;
                }
                Ok(())
            }
            EngineSpec::Sim(d) => write!(f, "sim:{d}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for EngineSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Ok(match s {
            "auto" => EngineSpec::Auto,
            "io_uring" | "uring" => EngineSpec::Uring,
            "psync" => EngineSpec::Psync,
            "null" => EngineSpec::Null,
            "sim" => EngineSpec::Sim(SimDevice::default()),
            _ => {
                if let Some(models) = s.strip_prefix("null-sim:") {
                    EngineSpec::NullSim(LatencyModel::parse_list(models)?)
                } else if let Some(device) = s.strip_prefix("sim:") {
                    EngineSpec::Sim(device.parse()?)
                } else {
                    return Err(format!(
                        "'{s}' is not an engine (auto, io_uring, psync, null, sim[:servers=N,service=T,dist=exp|fixed|lognormal,sigma=S,max_mbps=M,drift=±P%,settle=T|never,ramp=T,age=T], null-sim:MODELS)"
                    ));
                }
            }
        })
    }
}

impl serde::Serialize for EngineSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for EngineSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One file of an I/O thread's engine: the opened disk (None for engines without a
/// target), the worker it belongs to, and the seed of its simulated latencies.
#[derive(Debug)]
pub struct EngineFile {
    pub disk: Option<OpenDisk>,
    pub worker: u32,
    pub seed: u64,
}

/// An I/O thread's engine, built and ready: which one is decided here, once, and the thread
/// loop is then monomorphised for it through `Drive` (no dispatch per I/O).
#[allow(clippy::large_enum_variant)] // built once per thread
pub enum BuiltEngine {
    Uring(UringEngine),
    Psync(PsyncEngine),
    Null(NullEngine),
    Sim(NullEngine, VirtualClock),
    /// A simulated device in simulated time, and on the wall clock.
    Device(SimEngine<VirtualClock>, VirtualClock),
    DeviceReal(SimEngine<MonoClock>),
}

/// Work that runs against any engine and clock (the fleet's thread loop).
pub trait Drive {
    type Out;
    fn drive<E: Engine, C: Clock>(self, engine: &mut E, clock: &C) -> Self::Out;
}

impl BuiltEngine {
    /// Whether time is simulated (the loop must not wait for the wall-clock start).
    pub fn simulated_time(&self) -> bool {
        matches!(self, BuiltEngine::Sim(..) | BuiltEngine::Device(..))
    }

    /// Run `work` on this engine, with real time counted from `epoch` or, for a
    /// simulated engine, its own virtual clock.
    pub fn drive<D: Drive>(&mut self, epoch: Instant, work: D) -> D::Out {
        let mono = MonoClock::new(epoch);
        match self {
            BuiltEngine::Uring(e) => work.drive(e, &mono),
            BuiltEngine::Psync(e) => work.drive(e, &mono),
            BuiltEngine::Null(e) => work.drive(e, &mono),
            BuiltEngine::Sim(e, clock) => work.drive(e, &*clock),
            BuiltEngine::Device(e, clock) => work.drive(e, &*clock),
            BuiltEngine::DeviceReal(e) => {
                // The device's clock and the loop's count from the same start instant.
                *e.clock_mut() = mono;
                work.drive(e, &mono)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_round_trips_and_names_what_is_wrong() {
        for s in [
            "auto",
            "io_uring",
            "psync",
            "null",
            "null-sim:fixed:80000;exp:1000000",
            "sim:servers=8,service=200000ns,dist=exp",
        ] {
            let e: EngineSpec = s.parse().unwrap();
            assert_eq!(e.to_string(), s);
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(serde_json::from_str::<EngineSpec>(&json).unwrap(), e);
        }
        assert_eq!("uring".parse::<EngineSpec>().unwrap(), EngineSpec::Uring);
        let e = "null-sim:fixed:80us".parse::<EngineSpec>().unwrap();
        assert_eq!(e, EngineSpec::NullSim(vec![LatencyModel::Fixed(80_000)]));
        assert!("spdk".parse::<EngineSpec>().unwrap_err().contains("spdk"));
        assert!("null-sim:gauss:1".parse::<EngineSpec>().is_err());
        assert!("null-sim:".parse::<EngineSpec>().is_err());
        assert_eq!(
            "sim".parse::<EngineSpec>().unwrap(),
            EngineSpec::Sim(SimDevice::default())
        );
        let e = "sim:servers=0".parse::<EngineSpec>().unwrap_err();
        assert!(e.contains("servers"), "{e}");
    }

    #[test]
    fn caps_are_declared_per_engine() {
        assert!(!EngineSpec::Psync.caps().async_qd);
        assert!(EngineSpec::Uring.caps().needs_target);
        assert!(!EngineSpec::Null.caps().needs_target);
        assert!(
            EngineSpec::NullSim(vec![LatencyModel::Fixed(1)])
                .caps()
                .simulated_time
        );
        let mut notices = Vec::new();
        let r = EngineSpec::Auto.resolve(&mut notices).unwrap();
        assert_ne!(r, EngineSpec::Auto);
        assert!(EngineSpec::Auto
            .build(
                vec![EngineFile {
                    disk: None,
                    worker: 0,
                    seed: 0,
                }],
                EngineParams {
                    slots: 1,
                    max_bs: 512
                },
                0,
            )
            .is_err());
        assert!(EngineSpec::Psync
            .build(
                vec![EngineFile {
                    disk: None,
                    worker: 0,
                    seed: 0,
                }],
                EngineParams {
                    slots: 1,
                    max_bs: 512
                },
                0,
            )
            .is_err());
    }
}
