//! The live terminal view: one progress line on stderr while a run goes (phase,
//! elapsed/total, last-interval IOPS, MB/s and p99) and, for a fleet across hosts, one
//! row per host with the same figures for its workers. The line's text comes from
//! `LiveLine`, a plain state machine over the observer's events (tested on its own);
//! the terminal only ever receives whole lines. It is an `Observer`, called from
//! the controller thread once per interval, so it never touches I/O threads. Hidden when
//! stderr is not a terminal or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{BinaryBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use iofleet_fleet::{IntervalSnapshot, Observer, Phase};
use iofleet_stats::result::IntervalRow;

pub struct LiveView {
    multi: Option<MultiProgress>,
    bar: Option<ProgressBar>,
    host_rows: Vec<ProgressBar>,
    line: LiveLine,
}

impl LiveView {
    pub fn new(quiet: bool) -> Self {
        let (multi, bar) = if !quiet && std::io::stderr().is_terminal() {
            let m = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let b = m.add(ProgressBar::new(1));
            // The line is drawn whole from `LiveLine`: one `set_message` per event, so
            // no half-updated state (a new length with the old position) is ever drawn.
            // `wide_msg`: clipped to the terminal's width, so the line never wraps.
            b.set_style(ProgressStyle::with_template("{wide_msg}").expect("static template"));
            (Some(m), Some(b))
        } else {
            (None, None)
        };
        LiveView {
            multi,
            bar,
            host_rows: Vec::new(),
            line: LiveLine::default(),
        }
    }

    fn draw(&self) {
        if let Some(b) = &self.bar {
            b.set_message(self.line.text());
        }
    }

    pub fn finish(&mut self) {
        for r in self.host_rows.drain(..) {
            r.finish_and_clear();
        }
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }

    /// One row per host (created at the first interval of a fleet across hosts).
    fn host_rows(&mut self, snap: &IntervalSnapshot<'_>) {
        let Some(m) = &self.multi else { return };
        if snap.hosts.len() < 2 {
            return;
        }
        while self.host_rows.len() < snap.hosts.len() {
            let row = m.add(ProgressBar::new(1));
            row.set_style(ProgressStyle::with_template("{msg}").expect("static template"));
            self.host_rows.push(row);
        }
        // Each host's brief: of its workers' sample, or, below a relay, its relay's.
        let n_streams = snap.layout.streams.len();
        let per_host = iofleet_stats::fold::sum_by_host(
            snap.workers,
            snap.worker_host,
            snap.hosts.len(),
            n_streams,
        );
        let briefs = iofleet_stats::brief::briefs_of(&per_host, &snap.relayed.hosts);
        let secs = snap.row.duration_s.max(1e-9);
        for ((row, name), b) in self.host_rows.iter().zip(snap.hosts).zip(&briefs) {
            row.set_message(format!(
                "  {:<16} {:>10.0} IOPS {:>8.1} MB/s  p99 {:>9.1} µs",
                name.chars().take(16).collect::<String>(),
                b.all.ios as f64 / secs,
                b.all.bytes as f64 / secs / 1e6,
                b.all.p99_ns as f64 / 1000.0
            ));
        }
    }
}

impl Observer for LiveView {
    fn notice(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(format!("note: {}", iofleet_report::text::escape_lines(msg))),
            None => eprintln!("note: {}", iofleet_report::text::escape_lines(msg)),
        }
    }

    fn phase(&mut self, phase: Phase, planned_s: f64) {
        self.line.phase(phase, planned_s);
        self.draw();
    }

    fn prepare_progress(&mut self, done: u64, total: u64) {
        self.line.prepare_progress(done, total);
        self.draw();
    }

    fn status(&mut self, line: &str) {
        if let Some(b) = &self.bar {
            b.set_message(line.to_string());
        }
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        self.host_rows(snap);
        self.line.interval(snap.row);
        self.draw();
    }
}

/// The text of the progress line, kept apart from the terminal so it can be tested
/// over a sequence of events. Each phase shows its own clock: bytes written while
/// preparing, seconds since the phase began during warm-up and measurement. The clock
/// starts at 0 when a phase begins and only moves forward within it: an interval of
/// the previous phase that is handed over late (the last warm-up interval arrives
/// after measurement has begun) updates the figures but not the clock.
#[derive(Debug, Default)]
pub struct LiveLine {
    phase: Option<Phase>,
    planned_s: f64,
    /// Seconds of the current phase covered by its finished intervals.
    clock_s: f64,
    /// Start of the first measured interval, seconds since the timeline start.
    measure_start_s: Option<f64>,
    prepared: (u64, u64),
    figures: Option<String>,
}

const BAR_CELLS: usize = 12;

fn bar(done: f64, total: f64) -> String {
    let frac = if total > 0.0 {
        (done / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let full = (frac * BAR_CELLS as f64).round() as usize;
    format!("[{}{}]", "#".repeat(full), "-".repeat(BAR_CELLS - full))
}

impl LiveLine {
    pub fn phase(&mut self, phase: Phase, planned_s: f64) {
        if self.phase != Some(phase) {
            self.clock_s = 0.0;
        }
        self.phase = Some(phase);
        self.planned_s = planned_s;
        if phase == Phase::Prepare {
            self.prepared = (0, 0);
        }
    }

    pub fn prepare_progress(&mut self, done: u64, total: u64) {
        // Several groups may prepare one after the other: each starts from 0 again.
        self.prepared = (done, total);
    }

    pub fn interval(&mut self, r: &IntervalRow) {
        self.figures = Some(format!(
            "{:>9.0} IOPS {:>7.1} MB/s p99 {:>8} µs",
            r.iops,
            r.mbps,
            iofleet_report::compare::opt1(r.p99_us)
        ));
        let end = r.t_s + r.duration_s;
        let clock = match (self.phase, r.warmup) {
            (Some(Phase::Warmup), true) => Some(end),
            (Some(Phase::Measure), false) => {
                let start = *self.measure_start_s.get_or_insert(r.t_s);
                Some(end - start)
            }
            _ => None, // a row of another phase: its clock is not this one's
        };
        if let Some(c) = clock {
            self.clock_s = self.clock_s.max(c);
        }
    }

    /// The line as it stands; empty before the first phase.
    pub fn text(&self) -> String {
        match self.phase {
            None | Some(Phase::Done) => String::new(),
            Some(Phase::Prepare) => {
                let (done, total) = self.prepared;
                format!(
                    "preparing disks {} {} of {} written",
                    bar(done as f64, total as f64),
                    BinaryBytes(done),
                    BinaryBytes(total)
                )
            }
            Some(p) => {
                let name = if p == Phase::Warmup {
                    "warm-up"
                } else {
                    "measure"
                };
                let planned = self.planned_s.ceil().max(1.0);
                format!(
                    "{name:>8} {:>5}/{} s {} {}",
                    self.clock_s.round() as u64,
                    planned as u64,
                    bar(self.clock_s, planned),
                    self.figures.as_deref().unwrap_or("")
                )
                .trim_end()
                .to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: u32, t_s: f64, warmup: bool) -> IntervalRow {
        IntervalRow::from_sample(
            index,
            t_s,
            1.0,
            warmup,
            0,
            &iofleet_stats::Sample::default(),
        )
    }

    /// The clock field of the line: "3/4" of "measure     3/4 s [...]".
    fn clock(l: &LiveLine) -> String {
        l.text().split_whitespace().nth(1).unwrap_or("").to_string()
    }

    #[test]
    fn fill_bytes_never_show_as_the_warm_up_clock() {
        let mut l = LiveLine::default();
        l.phase(Phase::Prepare, 0.0);
        l.prepare_progress(134_217_728, 268_435_456);
        assert!(
            l.text().contains("128.00 MiB of 256.00 MiB"),
            "{}",
            l.text()
        );
        l.prepare_progress(268_435_456, 268_435_456);
        l.phase(Phase::Warmup, 3.0);
        assert!(l.text().starts_with(" warm-up     0/3 s"), "{}", l.text());
        assert!(!l.text().contains("268435456"), "{}", l.text());
    }

    #[test]
    fn measure_clock_never_goes_backwards() {
        let mut l = LiveLine::default();
        l.phase(Phase::Warmup, 3.0);
        let mut seen = vec![clock(&l)];
        l.interval(&row(0, 0.0, true));
        seen.push(clock(&l));
        l.interval(&row(1, 1.0, true));
        seen.push(clock(&l));
        // Measurement begins before the last warm-up interval is handed over.
        l.phase(Phase::Measure, 4.0);
        seen.push(clock(&l));
        l.interval(&row(2, 2.0, true));
        seen.push(clock(&l));
        for i in 3..7 {
            l.interval(&row(i, i as f64, false));
            seen.push(clock(&l));
        }
        assert_eq!(
            seen,
            ["0/3", "1/3", "2/3", "0/4", "0/4", "1/4", "2/4", "3/4", "4/4"]
        );
    }

    #[test]
    fn measure_clock_without_warm_up_starts_at_the_first_interval() {
        let mut l = LiveLine::default();
        l.phase(Phase::Measure, 3.0);
        let mut seen = Vec::new();
        for i in 0..3 {
            l.interval(&row(i, i as f64, false));
            seen.push(clock(&l));
        }
        assert_eq!(seen, ["1/3", "2/3", "3/3"]);
        assert!(l.text().contains("IOPS"), "{}", l.text());
        l.phase(Phase::Done, 0.0);
        assert_eq!(l.text(), "");
    }
}
