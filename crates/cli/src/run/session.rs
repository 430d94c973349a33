//! One command's session (`Session`): its fleet and its live outputs, and the
//! measurements, steps and rounds it runs as its methods (`measure` in `measure.rs`,
//! `measure_step` in `steady.rs`, `step` in `stepping.rs`). The fleet (`dyn Fleet`) is opened by the
//! command's first measurement and kept for every later one — a sweep's steps, a
//! steady state's rounds, a job file's phases run on the same agents, pods and files —
//! and closed when the command ends (`finish`), or right after its one measurement when
//! the command has only one (`close_after_one`: what closing says, such as a Kubernetes
//! fleet deleted, is then part of the result). The live outputs: the `--metrics-listen` listener (bound here, with the
//! `crate::web::access` policy of `--allow-host` and `--token-file`), the `/metrics`
//! exporter's state and, with `--ui`, the live view's history, made once by the command
//! before its first round or step and kept until it ends. Every round of
//! `--steady-state`, step of `sweep` and `find-max`, and phase of a fio job file is a
//! `Session::measure` of its own that borrows them, so a page stays connected across
//! them, its charts hold the whole command, and the port is bound once.
//!
//! The command announces each round or step (`announce`), which the live view sends as a
//! `step` event; the end of the command (`finish`) is the live view's `done`, after
//! which open pages get at most 2 s to receive it. The terminal line and the results
//! store stay per measurement (`Session::measure`): each round or step is its own run.

use std::net::TcpListener;

use iofleet_fleet::{Fleet, Observer};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::web::access::Access;
use crate::web::live_web::LiveWeb;
use crate::web::metrics::Metrics;
use crate::web::step::Step;

/// The fleet, listener, exporter and live view of one command (each absent until made,
/// or when not asked for).
pub(crate) struct Session {
    web: Option<LiveWeb>,
    metrics: Option<Metrics>,
    finished: bool,
    fleet: Option<Box<dyn Fleet>>,
    /// The command measures once: close the fleet right after that measurement.
    pub close_after_one: bool,
    quiet: bool,
}

impl Session {
    /// What `a` asks for: with `--metrics-listen`, bind it (before any I/O; an address
    /// that cannot be bound, or one that is not loopback without `--token-file`, exits 2
    /// naming the flag) and print the addresses (and, off loopback, a notice); with
    /// `--ui`, the live view too, with `run`'s `--baseline` (read from the store now: a
    /// run not found exits 2 naming the flag) and `--slo`.
    pub fn open(a: &RunArgs) -> Result<Session, Exit> {
        let web = match a.ui {
            true => Some(live_web(a)?),
            false => None,
        };
        let metrics = match &a.metrics_listen {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .map_err(|e| Exit::input(format!("--metrics-listen {addr}: {e}")))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| Exit::input(format!("--metrics-listen {addr}: {e}")))?;
                let access = Access::new("--metrics-listen", local, &a.access)?;
                if !a.quiet {
                    let what = match web {
                        Some(_) => "watch the run",
                        None => "read the run's metrics",
                    };
                    if let Some(notice) = access.notice(what) {
                        eprintln!("{notice}");
                    }
                    eprintln!("metrics: http://{local}/metrics");
                    if web.is_some() {
                        eprintln!("live view: http://{local}/");
                    }
                }
                Some(Metrics::serve(
                    listener,
                    access,
                    web.as_ref().map(|w| w.site()),
                )?)
            }
            None => None,
        };
        Ok(Session {
            finished: false,
            web,
            metrics,
            fleet: None,
            close_after_one: false,
            quiet: a.quiet,
        })
    }

    /// The command's fleet (made from `a` by the first measurement: `--hosts`' inventory
    /// or Kubernetes description, else `--target` here) and the observers a measurement
    /// adds to its own: the exporter and the live view.
    pub fn fleet_and_observers(
        &mut self,
        a: &RunArgs,
    ) -> Result<(&mut dyn Fleet, Vec<&mut dyn Observer>), Exit> {
        if self.fleet.is_none() {
            self.fleet = Some(crate::run::resolve::launcher_for(a)?);
        }
        let fleet = self.fleet.as_deref_mut().expect("made above");
        let mut out: Vec<&mut dyn Observer> = Vec::new();
        if let Some(m) = self.metrics.as_mut() {
            out.push(m);
        }
        if let Some(w) = self.web.as_mut() {
            out.push(w);
        }
        Ok((fleet, out))
    }

    /// Close the command's fleet, if one was made: what closing did, for the user.
    pub fn close_fleet(&mut self) -> Vec<String> {
        self.fleet.take().map(|mut f| f.close()).unwrap_or_default()
    }

    /// A round or step begins: the live view says so (and from now on a run's end is
    /// the step's, not the command's).
    pub fn announce(&mut self, step: &Step) {
        if let Some(w) = self.web.as_mut() {
            w.step(step);
        }
    }

    /// The command is over: its fleet closed (what that did printed as notes), the live
    /// view's `done` (unless a run without rounds or steps already sent it), then at
    /// most 2 s for open pages to receive it before the process exits and the listener
    /// closes. Once; dropping does it too.
    pub fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        for n in self.close_fleet() {
            if !self.quiet {
                eprintln!("note: {}", iofleet_report::text::escape_lines(&n));
            }
        }
        if let Some(w) = self.web.as_mut() {
            w.end();
            w.linger(std::time::Duration::from_secs(2));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The live view, with `run`'s `--baseline` and `--slo`.
fn live_web(a: &RunArgs) -> Result<LiveWeb, Exit> {
    let mut web = LiveWeb::new();
    if let Some(q) = &a.live.baseline {
        let db = crate::store::record::DbArg {
            db: a.save.db.clone(),
        };
        let named = |e: Exit| Exit {
            code: e.code,
            message: format!("--baseline {q}: {}", e.message),
        };
        let store = db.open().map_err(named)?;
        let run = crate::store::stored::load_run(&store, q).map_err(named)?;
        web.baseline(&run);
    }
    web.objectives(&a.live.slo);
    Ok(web)
}
