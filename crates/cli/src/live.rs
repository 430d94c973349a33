//! The live terminal view: one progress line on stderr while a run goes (phase,
//! elapsed/total, last-interval IOPS, MB/s and p99). It is an `Observer`, called from the
//! controller thread once per interval, so it never touches I/O threads. Hidden when
//! stderr is not a terminal or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iofleet_fleet::{IntervalSnapshot, Observer, Phase};

pub struct LiveView {
    bar: Option<ProgressBar>,
    phase_start_s: f64,
}

impl LiveView {
    pub fn new(quiet: bool) -> Self {
        let bar = if !quiet && std::io::stderr().is_terminal() {
            let b = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            Some(b)
        } else {
            None
        };
        LiveView {
            bar,
            phase_start_s: 0.0,
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Observer for LiveView {
    fn notice(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(format!("note: {msg}")),
            None => eprintln!("note: {msg}"),
        }
    }

    fn phase(&mut self, phase: Phase, planned_s: f64) {
        let Some(b) = &self.bar else { return };
        match phase {
            Phase::Prepare => {
                b.set_style(
                    ProgressStyle::with_template(
                        "preparing disks {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}",
                    )
                    .expect("static template"),
                );
            }
            Phase::Warmup | Phase::Measure => {
                let name = if phase == Phase::Warmup {
                    "warm-up"
                } else {
                    "measure"
                };
                b.set_style(
                    ProgressStyle::with_template(&format!(
                        "{name:>8} {{pos:>5}}/{{len}} s {{wide_bar}} {{msg}}"
                    ))
                    .expect("static template"),
                );
                b.set_length(planned_s.ceil().max(1.0) as u64);
                b.set_position(0);
            }
            Phase::Done => {}
        }
    }

    fn prepare_progress(&mut self, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total.max(1));
            b.set_position(done);
        }
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        let Some(b) = &self.bar else { return };
        let r = snap.row;
        if r.warmup {
            self.phase_start_s = 0.0;
        } else if self.phase_start_s == 0.0 || r.index == 0 {
            self.phase_start_s = r.t_s;
        }
        let end = r.t_s + r.duration_s;
        b.set_position((end - if r.warmup { 0.0 } else { self.phase_start_s }).round() as u64);
        b.set_message(format!(
            "{:>10.0} IOPS {:>8.1} MB/s  p99 {:>9.1} µs",
            r.iops, r.mbps, r.p99_us
        ));
    }
}
