//! `iofleet agent`: the same binary, run on a remote host by the controller over SSH,
//! speaking the protocol on stdin/stdout. It runs its share of the fleet with the very
//! same `run_gated` as a local run: it prepares, reports ready, starts at the instant
//! the controller names (on its own clock), and streams every interval's per-worker
//! samples back. It never listens on a port, and it stops by itself when its stdin
//! closes (the controller or the SSH session went away), so no orphan keeps running.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver};
use iofleet_engine::target::TargetSpec;
use iofleet_stats::result::RunInfo;

use crate::controller::{run_gated, EngineChoice, FleetError, RunConfig, StartGate};
use crate::observer::{IntervalSnapshot, Observer};
use crate::protocol::{
    check_hello, mono_ns, read_frame, write_frame, AgentJob, Clock, Done, Failure, Frame, Hello,
    IntervalData, Ready, TargetArg, MAGIC,
};

type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn send(out: &Out, f: &Frame) -> io::Result<()> {
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    write_frame(&mut **w, f)
}

/// What the stdin reader hands to the run.
enum Control {
    Start(u64),
    /// Stop frame or end of input.
    Stop,
}

struct Gate {
    out: Out,
    control: Receiver<Control>,
    /// The start instant on this host's clock, for the streamer's `Started` report.
    epoch_ns: Arc<AtomicU64>,
}

impl StartGate for Gate {
    fn ready(&mut self, engine: &str, notices: &[String]) -> Result<Instant, FleetError> {
        send(
            &self.out,
            &Frame::Ready(Ready {
                notices: notices.to_vec(),
                engine: engine.to_string(),
            }),
        )
        .map_err(|e| FleetError::Setup(format!("cannot reach the controller: {e}")))?;
        match self.control.recv() {
            Ok(Control::Start(epoch_ns)) => {
                self.epoch_ns.store(epoch_ns, Ordering::SeqCst);
                let now = mono_ns();
                let ahead = Duration::from_nanos(epoch_ns.saturating_sub(now));
                Ok(Instant::now() + ahead)
            }
            _ => Err(FleetError::Setup(
                "the controller stopped the run before it started".into(),
            )),
        }
    }
}

struct Streamer {
    out: Out,
    worker_base: u32,
    nominal_ns: u64,
    epoch_ns: Arc<AtomicU64>,
}

impl Observer for Streamer {
    fn started(&mut self, info: &RunInfo) {
        // Called once every I/O thread has begun; `start_skew_ms` is how late the last
        // one began after the epoch. Report that instant on this host's clock.
        let t = self.epoch_ns.load(Ordering::SeqCst) + (info.start_skew_ms * 1e6) as u64;
        let _ = send(&self.out, &Frame::Started(Clock { seq: 0, t_ns: t }));
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        let row = snap.row;
        let start_ns = (row.t_s * 1e9).round() as u64;
        let dur_ns = (row.duration_s * 1e9).round() as u64;
        let data = IntervalData {
            index: row.index,
            // A stop-shortened interval carries its end; a phase's short last piece has
            // the same end as its boundary, which the controller ignores.
            stopped_at: (dur_ns < self.nominal_ns).then_some(start_ns + dur_ns),
            samples: snap
                .workers
                .iter()
                .enumerate()
                .map(|(i, s)| (self.worker_base + i as u32, s.clone()))
                .collect(),
        };
        let _ = send(&self.out, &Frame::Interval(data));
    }
}

fn config(job: &AgentJob) -> Result<RunConfig, String> {
    let target = match &job.target {
        TargetArg::Dir(d) => TargetSpec::Dir(PathBuf::from(d)),
        TargetArg::Devices(v) => TargetSpec::Devices(v.iter().map(PathBuf::from).collect()),
    };
    Ok(RunConfig {
        groups: job.groups.clone(),
        engine: match job.engine.as_str() {
            "io_uring" => EngineChoice::Uring,
            "psync" => EngineChoice::Psync,
            "null" => EngineChoice::Null,
            "auto" => EngineChoice::Auto,
            other => match other.strip_prefix("null-sim:") {
                Some(spec) => EngineChoice::NullSim(crate::parse_sim_latency(spec)?),
                None => return Err(format!("unknown engine '{other}'")),
            },
        },
        target_label: match &job.target {
            TargetArg::Dir(d) => d.clone(),
            TargetArg::Devices(v) => v.join(","),
        },
        target,
        direct: job.direct,
        destroy_data: job.destroy_data,
        disk_size_from_cli: job.disk_size_from_cli,
        seed: job.seed,
        cleanup: job.cleanup,
    })
}

/// Serve one controller on `input`/`output`. Returns the process exit code.
pub fn serve(input: Box<dyn Read + Send>, output: Box<dyn Write + Send>) -> i32 {
    let out: Out = Arc::new(Mutex::new(Box::new(BufWriter::new(output))));
    let mut input = BufReader::new(input);
    {
        let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
        if w.write_all(MAGIC).is_err() {
            return 1;
        }
    }
    let ours = Hello::ours();
    if send(&out, &Frame::Hello(ours.clone())).is_err() {
        return 1;
    }
    let fail = |msg: String, input: bool| {
        let _ = send(
            &out,
            &Frame::Error(Failure {
                message: msg,
                input,
            }),
        );
        if input {
            2
        } else {
            1
        }
    };
    match read_frame(&mut input) {
        Ok(Some(Frame::Hello(theirs))) => {
            if let Err(e) = check_hello(&ours, &theirs, "the controller") {
                return fail(e, true);
            }
        }
        _ => return fail("expected the controller's hello".into(), false),
    }
    // Clock pings come before the job; answer each at once.
    let job = loop {
        match read_frame(&mut input) {
            Ok(Some(Frame::Ping(c))) => {
                let pong = Frame::Pong(Clock {
                    seq: c.seq,
                    t_ns: mono_ns(),
                });
                if send(&out, &pong).is_err() {
                    return 1;
                }
            }
            Ok(Some(Frame::Job(job))) => break *job,
            // The controller went away or stopped before sending work.
            Ok(None) | Ok(Some(Frame::Stop)) => return 0,
            _ => return fail("expected a job".into(), false),
        }
    };

    // Everything after the job is read by one thread: clock pings are answered at once,
    // Start and Stop are handed over, and the end of input stops the run.
    let stop = Arc::new(AtomicBool::new(false));
    let (ctl_tx, ctl_rx) = unbounded();
    {
        let out = out.clone();
        let stop = stop.clone();
        std::thread::spawn(move || loop {
            match read_frame(&mut input) {
                Ok(Some(Frame::Ping(c))) => {
                    let _ = send(
                        &out,
                        &Frame::Pong(Clock {
                            seq: c.seq,
                            t_ns: mono_ns(),
                        }),
                    );
                }
                Ok(Some(Frame::Start(s))) => {
                    let _ = ctl_tx.send(Control::Start(s.epoch_ns));
                }
                Ok(Some(Frame::Stop)) => {
                    stop.store(true, Ordering::SeqCst);
                    let _ = ctl_tx.send(Control::Stop);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    stop.store(true, Ordering::SeqCst);
                    let _ = ctl_tx.send(Control::Stop);
                    return;
                }
            }
        });
    }

    let cfg = match config(&job) {
        Ok(c) => c,
        Err(e) => return fail(e, true),
    };
    let epoch_ns = Arc::new(AtomicU64::new(0));
    let mut gate = Gate {
        out: out.clone(),
        control: ctl_rx,
        epoch_ns: epoch_ns.clone(),
    };
    let mut streamer = Streamer {
        out: out.clone(),
        worker_base: job.groups.first().map_or(0, |g| g.worker_base),
        nominal_ns: job
            .groups
            .first()
            .map_or(0, |g| g.plan.timing.interval.as_nanos() as u64),
        epoch_ns,
    };
    match run_gated(&cfg, stop, &mut streamer, &mut gate) {
        Ok(result) => {
            let end_ns = if result.run.interrupted {
                result
                    .intervals
                    .last()
                    .map(|r| ((r.t_s + r.duration_s) * 1e9).round() as u64)
                    .unwrap_or(0)
            } else {
                ((result.run.warmup_s + result.run.duration_s) * 1e9).round() as u64
            };
            let done = Done {
                end_ns,
                failures: result.summary.errors.failed_threads.clone(),
                errors: result.summary.errors.first.clone(),
                notices: result.notices.clone(),
            };
            if send(&out, &Frame::Done(done)).is_err() {
                return 1;
            }
            0
        }
        Err(e) => fail(e.to_string(), e.is_input_error()),
    }
}
