//! Clocks for the hot loop. `MonoClock` reads the monotonic clock; `VirtualClock` is a
//! shared counter that only moves when told to, so a whole run can execute in simulated
//! time with exact, repeatable latencies (the null engine's injected latencies drive it).
//! The loop is generic over `Clock`, so the choice costs nothing per I/O.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub trait Clock {
    /// Nanoseconds since this clock's epoch.
    fn now_ns(&self) -> u64;
    /// Block (or, for a virtual clock, jump) until `t_ns`.
    fn sleep_until(&self, t_ns: u64);
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

    #[test]
    fn mono_clock_advances() {
        let c = MonoClock::new(Instant::now());
        let a = c.now_ns();
        c.sleep_until(a + 1_000_000);
        assert!(c.now_ns() >= a + 1_000_000);
    }
}
