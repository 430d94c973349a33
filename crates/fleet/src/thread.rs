//! The I/O thread loop: one thread drives one disk through one engine, keeping each
//! lane's queue depth full (closed loop) or issuing at the lane's arrival times (open
//! loop), and records every completion into the current interval's `Sample`.
//!
//! The loop is generic over the engine and the clock, so the choice is made once per
//! thread and costs nothing per I/O. Per I/O it only generates an offset, stamps write
//! data, queues, and records: no allocation, no locks, no channels. Once per interval it
//! hands the finished `Sample` to the collector over a channel and starts a new one.
//! Latency is measured from the *intended* issue time: in an open-loop lane an I/O that
//! waits for a free slot is charged for the wait (no coordinated omission).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::Sender;
use iofleet_engine::{Clock, Engine, EngineError, IoReq, OpKind};
use iofleet_profile::{Arrival, Plan};
use iofleet_stats::result::ErrorDetail;
use iofleet_stats::Sample;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::gen::StreamGen;

/// The longest the loop waits without looking at the stop flag.
const STOP_POLL_NS: u64 = 100_000_000;
/// Error details kept per thread (the count is never capped).
const MAX_ERROR_DETAILS: usize = 10;

/// The interval boundaries shared by every thread of a run, in ns since the epoch.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// `boundaries[k]..boundaries[k+1]` is interval k; the first is 0.
    pub boundaries: Vec<u64>,
    /// Intervals `0..warmup_intervals` are warm-up.
    pub warmup_intervals: u32,
}

impl Timeline {
    /// Warm-up then measurement, each cut into `interval` pieces (a phase's last piece
    /// may be shorter when the phase is not a multiple of the interval).
    pub fn new(warmup: Duration, duration: Duration, interval: Duration) -> Self {
        let step = interval.as_nanos().max(1) as u64;
        let mut boundaries = vec![0u64];
        let cut = |len: u64, boundaries: &mut Vec<u64>| {
            let start = *boundaries.last().unwrap();
            let mut t = 0;
            let mut n = 0;
            while t < len {
                t = (t + step).min(len);
                boundaries.push(start + t);
                n += 1;
            }
            n
        };
        let warmup_intervals = cut(warmup.as_nanos() as u64, &mut boundaries);
        cut(duration.as_nanos() as u64, &mut boundaries);
        Timeline {
            boundaries,
            warmup_intervals,
        }
    }
    pub fn intervals(&self) -> u32 {
        (self.boundaries.len() - 1) as u32
    }
    pub fn end_ns(&self) -> u64 {
        *self.boundaries.last().unwrap()
    }
    pub fn measure_start_ns(&self) -> u64 {
        self.boundaries[self.warmup_intervals as usize]
    }
}

/// One lane of a thread: streams sharing a queue depth and (optionally) a rate.
#[derive(Debug, Clone)]
pub struct LaneSpec {
    /// (stream index in the plan, weight) pairs.
    pub streams: Vec<(usize, u32)>,
    pub qd: u32,
    /// Arrivals per second for this thread's lane; None = closed loop.
    pub rate_per_thread: Option<f64>,
    pub arrival: Arrival,
}

/// Identity and work of one I/O thread.
#[derive(Debug, Clone)]
pub struct ThreadSpec {
    /// Index of this thread in the whole fleet.
    pub id: u32,
    pub worker: u32,
    pub disk: u32,
    pub thread: u32,
    pub threads_per_disk: u32,
    pub lanes: Vec<LaneSpec>,
    pub seed: u64,
    /// Region of the disk within the opened file or device.
    pub region_offset: u64,
    pub disk_size: u64,
}

impl ThreadSpec {
    pub fn slots(&self) -> u32 {
        self.lanes.iter().map(|l| l.qd).sum()
    }
}

/// What threads tell the collector.
#[derive(Debug)]
pub enum Msg {
    Interval {
        /// The reporting source: a local thread, or a remote host.
        source: u32,
        index: u32,
        /// (global worker index, its sample) — one entry per worker of the source.
        samples: Vec<(u32, Sample)>,
        errors: Vec<ErrorDetail>,
        /// Set on the last interval of a thread that was stopped early: when it stopped
        /// (ns since the epoch), so the collector can cut that interval short.
        stopped_at: Option<u64>,
        /// What the source's host spent during the interval (remote hosts).
        usage: Option<iofleet_stats::HostUsage>,
    },
    Done {
        source: u32,
        /// When the source stopped issuing, ns since the epoch.
        end_ns: u64,
        error: Option<String>,
        /// Details of I/O errors not already sent with an interval (remote sources).
        errors: Vec<ErrorDetail>,
        /// The source vanished (a remote host whose connection died), rather than ended.
        lost: bool,
    },
    /// The source is alive (a remote host with nothing else to say yet).
    Heartbeat { source: u32 },
}

impl Msg {
    /// Who sent this message.
    pub fn source(&self) -> u32 {
        match self {
            Msg::Interval { source, .. } | Msg::Done { source, .. } | Msg::Heartbeat { source } => {
                *source
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    intended_ns: u64,
    offset: u64,
    len: u32,
    stream: u16,
    lane: u16,
    op: OpKind,
}

struct Lane {
    pick_cum: Vec<u32>,
    pick_stream: Vec<usize>,
    free: Vec<u32>,
    /// Mean gap between arrivals in ns (open loop only).
    gap_ns: Option<f64>,
    poisson: bool,
    next_arrival: f64,
}

impl Lane {
    #[inline]
    fn pick(&self, rng: &mut SmallRng) -> usize {
        if self.pick_stream.len() == 1 {
            return self.pick_stream[0];
        }
        let total = *self.pick_cum.last().unwrap();
        let r = rng.random_range(0..total);
        self.pick_stream[self.pick_cum.partition_point(|&c| c <= r)]
    }

    #[inline]
    fn advance(&mut self, rng: &mut SmallRng) {
        let gap = self.gap_ns.unwrap_or(0.0);
        self.next_arrival += if self.poisson {
            // Exponential inter-arrival time: -ln(U) × mean, U in (0, 1].
            let u: f64 = 1.0 - rng.random::<f64>();
            -u.ln() * gap
        } else {
            gap
        };
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed for one thread's generator, derived from the run seed and the thread's place.
pub fn thread_seed(run_seed: u64, worker: u32, disk: u32, thread: u32) -> u64 {
    splitmix(run_seed ^ ((worker as u64) << 40) ^ ((disk as u64) << 20) ^ thread as u64)
}

/// Make every 4 KiB of a write unique (offset and sequence in its first 16 bytes), so a
/// deduplicating target cannot collapse repeated writes of the same buffer.
#[inline]
fn stamp(buf: &mut [u8], len: u32, offset: u64, seq: u64) {
    let mut at = 0usize;
    while at + 16 <= len as usize {
        buf[at..at + 8].copy_from_slice(&(offset + at as u64).to_le_bytes());
        buf[at + 8..at + 16].copy_from_slice(&seq.to_le_bytes());
        at += 4096;
    }
}

/// Drive one disk until the timeline ends or `stop` is set. Returns the time the thread
/// stopped issuing. Every interval up to the stop (all of them, on a normal end) is
/// sent to `tx`, so the collector can tell when an interval is complete.
#[allow(clippy::too_many_arguments)]
pub fn run_thread<E: Engine, C: Clock>(
    engine: &mut E,
    clock: &C,
    spec: &ThreadSpec,
    plan: &Plan,
    timeline: &Timeline,
    stop: &AtomicBool,
    tx: &Sender<Msg>,
) -> Result<u64, EngineError> {
    let nstreams = plan.streams.len();
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut gens: Vec<Option<StreamGen>> = (0..nstreams).map(|_| None).collect();
    let mut lanes = Vec::with_capacity(spec.lanes.len());
    let mut next_slot = 0u32;
    for l in &spec.lanes {
        let mut pick_cum = Vec::new();
        let mut pick_stream = Vec::new();
        let mut acc = 0;
        for &(s, w) in &l.streams {
            acc += w.max(1);
            pick_cum.push(acc);
            pick_stream.push(s);
            gens[s].get_or_insert_with(|| {
                StreamGen::new(
                    &plan.streams[s],
                    spec.disk_size,
                    spec.thread,
                    spec.threads_per_disk,
                )
            });
        }
        let free: Vec<u32> = (next_slot..next_slot + l.qd).rev().collect();
        next_slot += l.qd;
        let gap_ns = l.rate_per_thread.map(|r| 1e9 / r);
        let mut lane = Lane {
            pick_cum,
            pick_stream,
            free,
            gap_ns,
            poisson: l.arrival == Arrival::Poisson,
            next_arrival: 0.0,
        };
        if let Some(gap) = gap_ns {
            // Start each open-loop lane at a random phase so threads do not fire in step.
            lane.next_arrival = rng.random::<f64>() * gap;
        }
        lanes.push(lane);
    }
    let mut slots = vec![
        Slot {
            intended_ns: 0,
            offset: 0,
            len: 0,
            stream: 0,
            lane: 0,
            op: OpKind::Read,
        };
        next_slot as usize
    ];

    let n_intervals = timeline.intervals();
    let end = timeline.end_ns();
    let mut idx: u32 = 0;
    let mut next_boundary = timeline.boundaries[1];
    let mut sample = Sample::new(nstreams);
    let mut errors: Vec<ErrorDetail> = Vec::new();
    let mut error_details_left = MAX_ERROR_DETAILS;
    let mut out = Vec::with_capacity(next_slot as usize);
    let mut inflight = 0u32;
    let mut seq = 0u64;
    let open_lanes = lanes.iter().any(|l| l.gap_ns.is_some());

    let flush =
        |idx: u32, sample: &mut Sample, errors: &mut Vec<ErrorDetail>, stopped_at: Option<u64>| {
            // A sparse copy goes; the counts arrays stay for the next interval.
            let full = sample.take();
            let _ = tx.send(Msg::Interval {
                source: spec.id,
                index: idx,
                samples: vec![(spec.worker, full)],
                errors: std::mem::take(errors),
                stopped_at,
                usage: None,
            });
        };

    let mut stopped_at;
    loop {
        let now = clock.now_ns();
        if now >= end || stop.load(Ordering::Relaxed) {
            stopped_at = now.min(end);
            break;
        }
        // Issue: fill every lane's free slots (closed loop) or its due arrivals (open loop).
        for (li, lane) in lanes.iter_mut().enumerate() {
            while let Some(&slot) = lane.free.last() {
                let intended = if lane.gap_ns.is_none() {
                    now
                } else if (lane.next_arrival as u64) <= now {
                    let t = lane.next_arrival as u64;
                    lane.advance(&mut rng);
                    t
                } else {
                    break;
                };
                lane.free.pop();
                let s = lane.pick(&mut rng);
                let (op, offset, len) = gens[s]
                    .as_mut()
                    .expect("lane stream has a generator")
                    .next(&mut rng);
                if op == OpKind::Write {
                    seq += 1;
                    stamp(engine.buffer_mut(slot), len, offset, seq);
                }
                slots[slot as usize] = Slot {
                    intended_ns: intended,
                    offset,
                    len,
                    stream: s as u16,
                    lane: li as u16,
                    op,
                };
                engine.queue(IoReq {
                    slot,
                    op,
                    offset: spec.region_offset + offset,
                    len,
                })?;
                inflight += 1;
            }
        }
        // Wait: for a completion, the next arrival, the interval boundary or a stop poll.
        let mut wake = next_boundary.min(end).min(now + STOP_POLL_NS);
        if open_lanes {
            for lane in &lanes {
                if lane.gap_ns.is_some() && !lane.free.is_empty() {
                    wake = wake.min(lane.next_arrival as u64);
                }
            }
        }
        if inflight == 0 {
            clock.sleep_until(wake);
        } else {
            let timeout = Duration::from_nanos(wake.saturating_sub(now));
            engine.submit_and_reap(1, Some(timeout), &mut out)?;
        }
        let t = clock.now_ns();
        while t >= next_boundary && idx + 1 < n_intervals {
            flush(idx, &mut sample, &mut errors, None);
            idx += 1;
            next_boundary = timeline.boundaries[idx as usize + 1];
        }
        for c in out.drain(..) {
            let sl = slots[c.slot as usize];
            inflight -= 1;
            lanes[sl.lane as usize].free.push(c.slot);
            if t >= end {
                continue; // completed after the timeline: not part of any interval
            }
            let stats = &mut sample.streams[sl.stream as usize];
            let ops = if sl.op == OpKind::Read {
                &mut stats.read
            } else {
                &mut stats.write
            };
            if c.result >= 0 && c.result as u32 == sl.len {
                ops.record(t.saturating_sub(sl.intended_ns), c.result as u64);
            } else {
                ops.record_error();
                if error_details_left > 0 {
                    error_details_left -= 1;
                    let message = if c.result < 0 {
                        std::io::Error::from_raw_os_error(-c.result).to_string()
                    } else {
                        format!("short transfer: {} of {} bytes", c.result, sl.len)
                    };
                    errors.push(ErrorDetail {
                        worker: spec.worker,
                        disk: spec.disk,
                        thread: spec.thread,
                        op: if sl.op == OpKind::Read {
                            "read"
                        } else {
                            "write"
                        }
                        .into(),
                        offset: spec.region_offset + sl.offset,
                        len: sl.len,
                        errno: (-c.result).max(0),
                        message,
                        t_s: t as f64 / 1e9,
                    });
                }
            }
        }
    }
    // Drain what is still in flight (bounded), without recording it. A failure here
    // does not cost the intervals already measured: they are still handed over.
    let drain_deadline = clock.now_ns() + 2_000_000_000;
    while inflight > 0 && clock.now_ns() < drain_deadline {
        if engine
            .submit_and_reap(1, Some(Duration::from_millis(100)), &mut out)
            .is_err()
        {
            break;
        }
        inflight -= out.len() as u32;
        out.clear();
    }
    // Hand over the interval in progress and, on a normal end, every remaining one.
    let finished = stopped_at >= end;
    if finished {
        stopped_at = end;
    }
    if finished {
        flush(idx, &mut sample, &mut errors, None);
        for k in idx + 1..n_intervals {
            flush(k, &mut sample, &mut errors, None);
        }
    } else {
        flush(idx, &mut sample, &mut errors, Some(stopped_at));
    }
    Ok(stopped_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_cuts_phases() {
        let t = Timeline::new(
            Duration::from_millis(2500),
            Duration::from_secs(3),
            Duration::from_secs(1),
        );
        assert_eq!(t.warmup_intervals, 3);
        assert_eq!(t.intervals(), 6);
        assert_eq!(t.measure_start_ns(), 2_500_000_000);
        assert_eq!(t.end_ns(), 5_500_000_000);
        assert_eq!(t.boundaries[3], 2_500_000_000);
        assert_eq!(t.boundaries[2], 2_000_000_000);
        let none = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert_eq!(none.warmup_intervals, 0);
        assert_eq!(none.intervals(), 2);
    }

    #[test]
    fn stamp_marks_every_4k() {
        let mut buf = vec![0u8; 16384];
        stamp(&mut buf, 8192, 1 << 20, 7);
        assert_eq!(u64::from_le_bytes(buf[0..8].try_into().unwrap()), 1 << 20);
        assert_eq!(
            u64::from_le_bytes(buf[4096..4104].try_into().unwrap()),
            (1 << 20) + 4096
        );
        assert_eq!(u64::from_le_bytes(buf[4104..4112].try_into().unwrap()), 7);
        assert!(buf[8192..].iter().all(|&b| b == 0), "beyond len untouched");
    }
}
