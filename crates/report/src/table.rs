//! The human-readable result: a headline with the columns practitioners publish (IOPS,
//! MB/s, mean/read/write latency, standard deviation, outstanding I/O, CPU, memory),
//! then latency percentiles per direction and per stream, intervals in brief, workers,
//! and errors. Plain text, fixed-width columns, no colour. A figure that was not
//! measured prints as `–`; a run interrupted before its first measured interval prints
//! that nothing was measured instead of a table of zeros.

use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::OpSummary;

use crate::Exporter;

pub struct TableExporter {
    /// Print every interval, not only a summary line about them.
    pub intervals: bool,
}

/// A figure with `prec` decimals, `–` when it was not measured.
fn d(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.prec$}"))
}

fn lat_row(out: &mut dyn Write, label: &str, s: &OpSummary) -> io::Result<()> {
    let l = |f: fn(&iofleet_stats::LatencySummary) -> f64| d(s.lat(f), 1);
    writeln!(
        out,
        "  {label:<14} {:>12.0} {:>9.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
        s.iops,
        s.mbps,
        l(|l| l.mean),
        l(|l| l.stddev),
        l(|l| l.p50),
        l(|l| l.p90),
        l(|l| l.p95),
        l(|l| l.p99),
        l(|l| l.p99_9),
        l(|l| l.p99_99),
        l(|l| l.max)
    )
}

impl Exporter for TableExporter {
    fn export(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let run = &r.run;
        let s = &r.summary;
        writeln!(
            out,
            "iofleet {}  profile {}  engine {}  target {}  direct I/O {}",
            run.iofleet_version,
            run.profile,
            run.engine,
            run.target,
            if run.direct { "on" } else { "off" }
        )?;
        if let Some(st) = &r.stored {
            writeln!(
                out,
                "run {}  name {}  labels {}",
                st.id,
                st.name,
                if st.labels.is_empty() {
                    "(none)".to_string()
                } else {
                    st.labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            )?;
        }
        if !r.measured() {
            writeln!(
                out,
                "started {}  INTERRUPTED before the first measured interval: nothing was measured, so there are no figures",
                run.started_at
            )?;
            for n in &r.notices {
                writeln!(out, "note: {n}")?;
            }
            return Ok(());
        }
        writeln!(
            out,
            "started {}  measured {:.1} s after {:.1} s warm-up{}",
            run.started_at,
            run.duration_s,
            run.warmup_s,
            if run.interrupted {
                "  (INTERRUPTED: partial result)"
            } else {
                ""
            }
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "  {:>12} {:>9} {:>12} {:>12} {:>12} {:>12} {:>11} {:>9} {:>9}",
            "IOPS",
            "MB/s",
            "lat mean µs",
            "read µs",
            "write µs",
            "stddev µs",
            "outstanding",
            "CPU %",
            "mem %"
        )?;
        writeln!(
            out,
            "  {:>12.0} {:>9.1} {:>12} {:>12} {:>12} {:>12} {:>11} {:>9} {:>9}",
            s.all.iops,
            s.all.mbps,
            d(s.all.lat(|l| l.mean), 1),
            d(s.read.lat(|l| l.mean), 1),
            d(s.write.lat(|l| l.mean), 1),
            d(s.all.lat(|l| l.stddev), 1),
            crate::compare::fmt_outstanding(&s.outstanding_io),
            d(s.cpu.as_ref().map(|c| c.host_pct), 1),
            d(s.memory.as_ref().map(|m| m.host_used_pct), 1)
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "  {:<14} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
            "latency µs",
            "IOPS",
            "MB/s",
            "mean",
            "stddev",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "p99.99",
            "max"
        )?;
        lat_row(out, "read", &s.read)?;
        lat_row(out, "write", &s.write)?;
        lat_row(out, "all", &s.all)?;
        if r.streams.len() > 1 {
            for st in &r.streams {
                let name: String = st.name.chars().take(14).collect();
                lat_row(out, &name, &st.all)?;
            }
        }
        writeln!(out)?;
        let measured: Vec<_> = r.intervals.iter().filter(|i| !i.warmup).collect();
        writeln!(
            out,
            "IOPS median of {} measured {:.0} s intervals: {}",
            measured.len(),
            run.interval_s,
            d(s.iops_median_interval, 0)
        )?;
        if self.intervals {
            writeln!(
                out,
                "  {:>7} {:>8} {:>12} {:>9} {:>10} {:>10}",
                "t s", "phase", "IOPS", "MB/s", "p50 µs", "p99 µs"
            )?;
            for i in &r.intervals {
                writeln!(
                    out,
                    "  {:>7.1} {:>8} {:>12.0} {:>9.1} {:>10} {:>10}",
                    i.t_s,
                    if i.warmup { "warm-up" } else { "measure" },
                    i.iops,
                    i.mbps,
                    d(i.p50_us, 1),
                    d(i.p99_us, 1)
                )?;
            }
        }
        match &s.cpu {
            Some(c) => writeln!(
                out,
                "CPU: iofleet usr {:.1}% sys {:.1}% (of one core), host {:.1}% of all cores; {} µs per I/O (host {} µs)",
                c.usr_pct,
                c.sys_pct,
                c.host_pct,
                d(c.us_per_io, 2),
                d(c.host_us_per_io, 2)
            )?,
            None => writeln!(out, "CPU: – (not measured)")?,
        }
        match &s.memory {
            Some(m) => writeln!(
                out,
                "Memory: iofleet peak RSS {:.1} MiB, host {:.1}% in use",
                m.rss_peak_mib, m.host_used_pct
            )?,
            None => writeln!(out, "Memory: – (not measured)")?,
        }
        if let Some(g) = &s.generator {
            let runq = g
                .runq_us_per_io
                .map_or("unknown".into(), |r| format!("{r:.2} µs"));
            let lag = g.issue_lag_p99_us.map_or(String::new(), |l| {
                format!(", open-loop issue lag p99 {l:.0} µs")
            });
            writeln!(
                out,
                "Generator: {} I/O thread{}, {:.0}% busy (busiest {:.0}%), run-queue delay {runq} per I/O{lag}",
                g.io_threads,
                if g.io_threads == 1 { "" } else { "s" },
                g.busy_pct,
                g.max_busy_pct
            )?;
            for w in &g.warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
        if let [h] = &r.hosts[..] {
            if let Some(n) = &h.net {
                writeln!(
                    out,
                    "Network: {:.2} MB/s received, {:.2} MB/s sent (all interfaces but lo)",
                    n.rx_mbps, n.tx_mbps
                )?;
            }
            if let Some(d) = &h.disk {
                writeln!(
                    out,
                    "Devices under the target: {:.0} IOPS, {:.1} MB/s, {:.1}% busy ({} device{})",
                    d.iops,
                    d.mbps,
                    d.busy_pct,
                    d.devices,
                    if d.devices == 1 { "" } else { "s" }
                )?;
            }
        }
        if r.workers.len() > 1 {
            writeln!(out)?;
            writeln!(
                out,
                "  {:>6} {:<16} {:>12} {:>9} {:>12} {:>12} {:>12} {:>12}",
                "worker",
                "host",
                "IOPS",
                "MB/s",
                "read mean",
                "read p99",
                "write mean",
                "write p99"
            )?;
            for w in &r.workers {
                writeln!(
                    out,
                    "  {:>6} {:<16} {:>12.0} {:>9.1} {:>12} {:>12} {:>12} {:>12}",
                    w.worker,
                    w.host.chars().take(16).collect::<String>(),
                    w.all.iops,
                    w.all.mbps,
                    d(w.read.lat(|l| l.mean), 1),
                    d(w.read.lat(|l| l.p99), 1),
                    d(w.write.lat(|l| l.mean), 1),
                    d(w.write.lat(|l| l.p99), 1)
                )?;
            }
        }
        if r.groups.len() > 1 {
            writeln!(out)?;
            writeln!(
                out,
                "  {:<14} {:<22} {:>7} {:>12} {:>9} {:>10} {:>10} {:>10} {:>10}",
                "group",
                "profile",
                "workers",
                "IOPS",
                "MB/s",
                "read mean",
                "read p99",
                "write mean",
                "write p99"
            )?;
            for g in &r.groups {
                writeln!(
                    out,
                    "  {:<14} {:<22} {:>7} {:>12.0} {:>9.1} {:>10} {:>10} {:>10} {:>10}",
                    g.name.chars().take(14).collect::<String>(),
                    g.profile.chars().take(22).collect::<String>(),
                    g.workers,
                    g.all.iops,
                    g.all.mbps,
                    d(g.read.lat(|l| l.mean), 1),
                    d(g.read.lat(|l| l.p99), 1),
                    d(g.write.lat(|l| l.mean), 1),
                    d(g.write.lat(|l| l.p99), 1)
                )?;
            }
        }
        if r.hosts.len() > 1 || r.hosts.iter().any(|h| h.lost_at_s.is_some()) {
            writeln!(out)?;
            writeln!(
                out,
                "  {:<16} {:>7} {:>12} {:>9} {:>10} {:>10} {:>10}  state",
                "host", "workers", "IOPS", "MB/s", "read p99", "write p99", "late ms"
            )?;
            for h in &r.hosts {
                let state = match (h.lost_at_s, h.straggler) {
                    (Some(t), _) => format!("LOST at {t:.1} s"),
                    (None, true) => "straggler".to_string(),
                    (None, false) => "ok".to_string(),
                };
                writeln!(
                    out,
                    "  {:<16} {:>7} {:>12.0} {:>9.1} {:>10} {:>10} {:>10}  {}",
                    h.host.chars().take(16).collect::<String>(),
                    h.workers,
                    h.all.iops,
                    h.all.mbps,
                    d(h.read.lat(|l| l.p99), 1),
                    d(h.write.lat(|l| l.p99), 1),
                    h.start_late_ms
                        .map_or("-".to_string(), |l| format!("{l:.2}")),
                    state
                )?;
            }
            writeln!(
                out,
                "  {:<16} {:>7} {:>12.0} {:>9.1}   start skew {} ms",
                "total",
                r.workers.len(),
                s.all.iops,
                s.all.mbps,
                d(run.start_skew_ms, 2)
            )?;
            if r.hosts.iter().any(|h| h.cpu.is_some()) {
                writeln!(out)?;
                writeln!(
                    out,
                    "  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>8}",
                    "host resources",
                    "iofleet%",
                    "host CPU%",
                    "RSS MiB",
                    "net rx",
                    "net tx",
                    "disk IOPS",
                    "disk MB/s",
                    "busy%"
                )?;
                let dash = || "-".to_string();
                for h in &r.hosts {
                    let cpu = h.cpu.as_ref();
                    let net = h.net.as_ref();
                    let disk = h.disk.as_ref();
                    writeln!(
                        out,
                        "  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>8}",
                        h.host.chars().take(16).collect::<String>(),
                        cpu.map_or_else(dash, |c| format!("{:.1}", c.usr_pct + c.sys_pct)),
                        cpu.map_or_else(dash, |c| format!("{:.1}", c.host_pct)),
                        h.memory
                            .as_ref()
                            .map_or_else(dash, |m| format!("{:.1}", m.rss_peak_mib)),
                        net.map_or_else(dash, |n| format!("{:.2}", n.rx_mbps)),
                        net.map_or_else(dash, |n| format!("{:.2}", n.tx_mbps)),
                        disk.map_or_else(dash, |d| format!("{:.0}", d.iops)),
                        disk.map_or_else(dash, |d| format!("{:.1}", d.mbps)),
                        disk.map_or_else(dash, |d| format!("{:.1}", d.busy_pct)),
                    )?;
                }
            }
        }
        let e = &s.errors;
        writeln!(out, "I/O errors: {}", e.count)?;
        for d in &e.first {
            writeln!(
                out,
                "  t={:.3}s worker {} disk {} thread {} {} offset {} len {}: {} (errno {})",
                d.t_s, d.worker, d.disk, d.thread, d.op, d.offset, d.len, d.message, d.errno
            )?;
        }
        for f in &e.failed_threads {
            writeln!(out, "  thread failed: {f}")?;
        }
        for n in &r.notices {
            writeln!(out, "note: {n}")?;
        }
        Ok(())
    }
}
