//! Clocks for the hot loop. `MonoClock` reads the monotonic clock; `VirtualClock` is a
//! shared counter that only moves when told to, so a whole run can execute in simulated
//! time with exact, repeatable latencies (the null engine's injected latencies drive it).
//! The loop is generic over `Clock`, so the choice costs nothing per I/O.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::{Thread, ThreadId};
use std::time::{Duration, Instant};

pub trait Clock {
    /// Nanoseconds since this clock's epoch.
    fn now_ns(&self) -> u64;
    /// Block (or, for a virtual clock, jump) until `t_ns`.
    fn sleep_until(&self, t_ns: u64);
    /// Block until `t_ns`, or until `wake_sleepers` is called (an idle I/O thread's
    /// wait, which a stop must end). A virtual clock jumps, as `sleep_until` does.
    fn nap_until(&self, t_ns: u64) {
        self.sleep_until(t_ns)
    }
    /// `t_ns` as a real instant, for a clock that measures real time.
    fn instant(&self, t_ns: u64) -> Option<Instant> {
        let _ = t_ns;
        None
    }
}

/// Real monotonic time measured from a shared epoch (the run's start instant).
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    epoch: Instant,
}

impl MonoClock {
    pub fn new(epoch: Instant) -> Self {
        MonoClock { epoch }
    }
    pub fn epoch(&self) -> Instant {
        self.epoch
    }
}

/// Threads napping on the real clock (`Clock::nap_until`), and how often they were
/// woken: `wake_sleepers` ends every such nap at once. An idle I/O thread naps until
/// its next I/O or interval boundary, and a stop (Ctrl-C, the controller's Stop) rings
/// this bell instead of every thread waking now and then to look at its stop flag: on
/// a machine running a thousand agents, those wake-ups were most of what an idle agent
/// cost.
struct Bell {
    rung: AtomicU64,
    sleepers: Mutex<Vec<(ThreadId, Thread)>>,
}

static BELL: Bell = Bell {
    rung: AtomicU64::new(0),
    sleepers: Mutex::new(Vec::new()),
};

/// This thread's place among the sleepers, taken on its first nap and given back when
/// it ends.
struct Sleeper(ThreadId);

impl Sleeper {
    fn join() -> Sleeper {
        let me = std::thread::current();
        let id = me.id();
        let mut all = BELL.sleepers.lock().unwrap_or_else(|p| p.into_inner());
        all.push((id, me));
        Sleeper(id)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let mut all = BELL.sleepers.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(id, _)| *id != self.0);
    }
}

thread_local! {
    static SLEEPER: Sleeper = Sleeper::join();
}

/// Block until `deadline`, or until `wake_sleepers` is called (`Clock::nap_until`).
pub fn nap(deadline: Instant) {
    let rung = BELL.rung.load(Ordering::SeqCst);
    let mut now = Instant::now();
    if deadline <= now {
        return;
    }
    // Registered before the bell is looked at again: a ring from here on unparks this
    // thread, and one before shows in `rung`.
    SLEEPER.with(|_| {});
    while now < deadline && BELL.rung.load(Ordering::SeqCst) == rung {
        // Parking ends at the deadline, on `unpark`, or spuriously: look again.
        std::thread::park_timeout(deadline - now);
        now = Instant::now();
    }
}

/// End every nap on the real clock now (`Clock::nap_until` returns early): for whoever
/// sets a run's stop flag, so idle I/O threads see it at once. Naps of every run in
/// the process end (a thread whose run goes on naps again); sleeps do not.
pub fn wake_sleepers() {
    BELL.rung.fetch_add(1, Ordering::SeqCst);
    let all = BELL.sleepers.lock().unwrap_or_else(|p| p.into_inner());
    for (_, t) in all.iter() {
        t.unpark();
    }
}

impl Clock for MonoClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    fn sleep_until(&self, t_ns: u64) {
        let now = self.now_ns();
        if t_ns > now {
            std::thread::sleep(Duration::from_nanos(t_ns - now));
        }
    }
    fn nap_until(&self, t_ns: u64) {
        nap(self.epoch + Duration::from_nanos(t_ns));
    }
    #[inline]
    fn instant(&self, t_ns: u64) -> Option<Instant> {
        self.epoch.checked_add(Duration::from_nanos(t_ns))
    }
}

/// Simulated time shared by one thread's loop and its engine.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    now: Rc<Cell<u64>>,
}

impl VirtualClock {
    pub fn new() -> Self {
        Self::default()
    }
    /// Move time forward to `t_ns` (never backwards).
    pub fn advance_to(&self, t_ns: u64) {
        if t_ns > self.now.get() {
            self.now.set(t_ns);
        }
    }
}

impl Clock for VirtualClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.now.get()
    }
    fn sleep_until(&self, t_ns: u64) {
        self.advance_to(t_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_only_moves_forward() {
        let c = VirtualClock::new();
        let c2 = c.clone();
        c.sleep_until(100);
        assert_eq!(c2.now_ns(), 100);
        c2.advance_to(50);
        assert_eq!(c.now_ns(), 100);
    }

    /// A nap on the real clock ends when the bell rings, long before its deadline,
    /// and one with no ring lasts its time; a sleep beside it is not cut short.
    #[test]
    fn the_bell_ends_a_nap_at_once_and_no_sleep() {
        let c = MonoClock::new(Instant::now());
        let (tx, rx) = std::sync::mpsc::channel();
        let napper = std::thread::spawn(move || {
            tx.send(()).unwrap();
            let t0 = Instant::now();
            c.nap_until(c.now_ns() + 60_000_000_000);
            t0.elapsed()
        });
        let sleeper = std::thread::spawn(move || {
            let t0 = Instant::now();
            c.sleep_until(c.now_ns() + 300_000_000);
            t0.elapsed()
        });
        rx.recv().unwrap();
        // Ring until the napper has begun its nap and been woken (a ring before its
        // nap began is missed by design: its stop flag is read first).
        while !napper.is_finished() {
            wake_sleepers();
            std::thread::sleep(Duration::from_millis(5));
        }
        let napped = napper.join().unwrap();
        assert!(napped < Duration::from_secs(30), "napped {napped:?}");
        let slept = sleeper.join().unwrap();
        assert!(slept >= Duration::from_millis(300), "slept {slept:?}");
        let t0 = Instant::now();
        c.nap_until(c.now_ns() + 20_000_000);
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn mono_clock_advances() {
        let c = MonoClock::new(Instant::now());
        let a = c.now_ns();
        c.sleep_until(a + 1_000_000);
        assert!(c.now_ns() >= a + 1_000_000);
    }
}
