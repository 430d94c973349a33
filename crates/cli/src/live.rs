//! The live terminal view: one progress line on stderr while a run goes (phase,
//! elapsed/total, last-interval IOPS, MB/s and p99) and, for a fleet across hosts, one
//! row per host with the same figures for its workers. It is an `Observer`, called from
//! the controller thread once per interval, so it never touches I/O threads. Hidden when
//! stderr is not a terminal or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use iofleet_fleet::{IntervalSnapshot, Observer, Phase};
use iofleet_stats::Sample;

pub struct LiveView {
    multi: Option<MultiProgress>,
    bar: Option<ProgressBar>,
    host_rows: Vec<ProgressBar>,
    phase_start_s: f64,
}

impl LiveView {
    pub fn new(quiet: bool) -> Self {
        let (multi, bar) = if !quiet && std::io::stderr().is_terminal() {
            let m = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let b = m.add(ProgressBar::new(1));
            (Some(m), Some(b))
        } else {
            (None, None)
        };
        LiveView {
            multi,
            bar,
            host_rows: Vec::new(),
            phase_start_s: 0.0,
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
        let mut per_host = vec![Sample::default(); snap.hosts.len()];
        for (w, s) in snap.workers.iter().enumerate() {
            if let Some(&h) = snap.worker_host.get(w) {
                per_host[h] += s;
            }
        }
        let secs = snap.row.duration_s.max(1e-9);
        for ((row, name), s) in self.host_rows.iter().zip(snap.hosts).zip(&per_host) {
            let all = s.all();
            row.set_message(format!(
                "  {:<16} {:>10.0} IOPS {:>8.1} MB/s  p99 {:>9.1} µs",
                name.chars().take(16).collect::<String>(),
                all.ios as f64 / secs,
                all.bytes as f64 / secs / 1e6,
                all.hist.quantile_ns(0.99) as f64 / 1000.0
            ));
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
        self.host_rows(snap);
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
            "{:>10.0} IOPS {:>8.1} MB/s  p99 {:>9} µs",
            r.iops,
            r.mbps,
            r.p99_us.map_or_else(|| "–".into(), |p| format!("{p:.1}"))
        ));
    }
}
