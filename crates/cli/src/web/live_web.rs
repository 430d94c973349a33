//! `--ui` (with `--metrics-listen ADDR`): the run in a browser while it goes. On the
//! metrics listener, `GET /` is one self-contained page (`live_page.html`: inline style
//! and script, charts drawn as inline SVG, nothing fetched from elsewhere) and
//! `GET /events` a Server-Sent Events stream of the run's observer events as JSON:
//! `run`, `phase`, `prepare`, `notice`, `interval` (fleet figures) and `hosts` (one
//! strip per host, with lost hosts and stragglers marked, and one per worker group),
//! preceded when given by `baseline` (a stored run's curves, `run --baseline`) and
//! `objectives` (`run --slo`). A command of several runs (steady-state rounds, sweep
//! and find-max steps, fio phases) keeps one `LiveWeb` for all of them
//! (`crate::run::session`): each begins with a `step` event, a run's end is then
//! `step-done`, and `done` comes once, at the command's end (`end`).
//!
//! The controller's thread (the observer) only formats each event once and appends it
//! to a bounded history under a mutex held for the append; it never waits for a viewer.
//! Each viewer's own connection thread copies the events it has not sent yet out of the
//! history and writes them outside the lock, so a page opened mid-run gets the whole run
//! so far (every interval, the latest host strip and prepare progress), and a slow or
//! stuck viewer only holds up itself. The history keeps the last `MAX_EVENTS` events.
//! A viewer that hangs up is noticed within about `HANGUP_CHECK` (its stream looks
//! whether the connection was closed at every wake-up), so its stream slot in
//! `crate::web::http` is soon free for another.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use iofleet_fleet::{IntervalSnapshot, Observer, Phase};
use iofleet_stats::brief::{HostBrief, Relayed};
use iofleet_stats::result::RunInfo;
use iofleet_stats::slo::{Objective, Ops};
use serde_json::json;

use crate::web::http::{Answer, Reply, Request};
use crate::web::step::Step;

/// Events kept for viewers that open the page later: an interval's fleet figures are
/// ~300 bytes, so at 1 s intervals this is about a day of run in about 30 MB at most.
pub const MAX_EVENTS: usize = 100_000;

/// How long a viewer's stream goes without news before it sends a keep-alive comment
/// (a write to a viewer that went away without closing fails).
const KEEPALIVE: Duration = Duration::from_secs(10);

/// How often a quiet viewer's stream looks whether its viewer hung up (a read that finds
/// the connection closed), so that its stream slot is free again within about this.
const HANGUP_CHECK: Duration = Duration::from_secs(1);

const PAGE: &str = include_str!("live_page.html");

/// The page's headers: its own script allowed by hash (`crate::web::serve::page_headers`).
static PAGE_HEADERS: LazyLock<String> =
    LazyLock::new(|| crate::web::serve::page_headers(&crate::web::serve::inline_scripts(PAGE)));

/// Events of which only the latest matters: replaced rather than appended, and never
/// dropped from the history (the baseline and objectives are sent once, first, and
/// must reach a viewer who opens the page a day into the run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Latest {
    Hosts,
    Prepare,
    Baseline,
    Objectives,
}

#[derive(Default)]
struct History {
    /// (sequence number, JSON) in order.
    events: VecDeque<(u64, String)>,
    latest: BTreeMap<Latest, (u64, String)>,
    next: u64,
    dropped: u64,
    done: bool,
    /// Per connected viewer, the next sequence number it will send.
    viewers: BTreeMap<u64, u64>,
    next_viewer: u64,
}

impl History {
    /// Events with sequence ≥ `from`, in order.
    fn since(&self, from: u64) -> Vec<(u64, String)> {
        let start = self.events.partition_point(|(seq, _)| *seq < from);
        let mut out: Vec<(u64, String)> = self.events.range(start..).cloned().collect();
        out.extend(
            self.latest
                .values()
                .filter(|(seq, _)| *seq >= from)
                .cloned(),
        );
        out.sort_by_key(|(seq, _)| *seq);
        out
    }
}

struct Shared {
    history: Mutex<History>,
    /// New events (or the run's end): what viewers wait for.
    news: Condvar,
    /// A viewer sent events or went away: what `linger` waits for. Kept apart from
    /// `news` so that one viewer's progress never wakes the others, which would find
    /// nothing new and wake each other in turn, without end.
    progress: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The observer side: formats events and appends them.
pub struct LiveWeb {
    shared: Arc<Shared>,
    /// The command announced rounds or steps: a run's end is then the step's
    /// (`step-done`), and the command's end (`end`) is the `done`.
    stepped: bool,
}

/// The server side: the page and the event streams.
#[derive(Clone)]
pub struct LiveSite {
    shared: Arc<Shared>,
}

impl LiveWeb {
    pub fn new() -> LiveWeb {
        LiveWeb {
            shared: Arc::new(Shared {
                history: Mutex::new(History::default()),
                news: Condvar::new(),
                progress: Condvar::new(),
            }),
            stepped: false,
        }
    }

    pub fn site(&self) -> LiveSite {
        LiveSite {
            shared: self.shared.clone(),
        }
    }

    fn push(&self, latest: Option<Latest>, event: serde_json::Value) {
        let text = event.to_string();
        let mut h = self.shared.lock();
        let seq = h.next;
        h.next += 1;
        match latest {
            Some(kind) => {
                h.latest.insert(kind, (seq, text));
            }
            None => {
                h.events.push_back((seq, text));
                if h.events.len() > MAX_EVENTS {
                    h.events.pop_front();
                    h.dropped += 1;
                }
            }
        }
        drop(h);
        self.shared.news.notify_all();
    }

    /// Before the run: a stored run to draw beside this one (`--baseline`): its name and
    /// each interval's start, length, warm-up flag, IOPS and p99 (µs), as its report
    /// shows them (recomputed from the store's histograms).
    pub fn baseline(&mut self, run: &iofleet_report::RunData) {
        let intervals: Vec<serde_json::Value> = run
            .result
            .intervals
            .iter()
            .map(|r| {
                json!({
                    "t_s": r.t_s,
                    "duration_s": r.duration_s,
                    "warmup": r.warmup,
                    "iops": r.iops,
                    "p99_us": r.p99_us,
                })
            })
            .collect();
        self.push(
            Some(Latest::Baseline),
            json!({
                "type": "baseline",
                "id": run.id,
                "name": run.name,
                "profile": run.result.run.profile,
                "started_at": run.result.run.started_at,
                "intervals": intervals,
            }),
        );
    }

    /// Before the run: the latency objectives to draw as lines (`--slo`), each as its
    /// text, its operations (`all`, `read`, `write`), its statistic and its limit (µs).
    pub fn objectives(&mut self, objectives: &[Objective]) {
        if objectives.is_empty() {
            return;
        }
        let list: Vec<serde_json::Value> = objectives
            .iter()
            .map(|o| {
                json!({
                    "text": o.to_string(),
                    "ops": match o.ops {
                        Ops::All => "all",
                        Ops::Read => "read",
                        Ops::Write => "write",
                    },
                    "stat": o.stat.name(),
                    "limit_us": o.limit_us,
                })
            })
            .collect();
        self.push(
            Some(Latest::Objectives),
            json!({ "type": "objectives", "objectives": list }),
        );
    }

    /// A round or step of the command begins: its kind, number, how many there are (or
    /// at most), what it is and the rate offered to the fleet.
    pub(crate) fn step(&mut self, step: &Step) {
        self.stepped = true;
        self.push(
            None,
            json!({
                "type": "step",
                "kind": step.kind.name(),
                "index": step.index,
                "of": step.of,
                "at_most": step.at_most,
                "label": step.label,
                "rate_iops": step.rate_iops,
            }),
        );
    }

    /// The command is over: `done`, unless a run without rounds or steps sent it at
    /// its end. Viewers' streams end once they have sent it.
    pub fn end(&mut self) {
        if self.shared.lock().done {
            return;
        }
        self.push(
            None,
            json!({ "type": "phase", "phase": "done", "planned_s": 0.0 }),
        );
        self.shared.lock().done = true;
        self.shared.news.notify_all();
    }

    /// After the run: wait (at most `limit`) until every connected viewer has been sent
    /// every event, so a page open at the end shows the run done before the process
    /// exits and the listener closes.
    pub fn linger(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut h = self.shared.lock();
        while h.viewers.values().any(|&sent| sent < h.next) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            h = self
                .shared
                .progress
                .wait_timeout(h, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Observer for LiveWeb {
    fn started(&mut self, info: &RunInfo) {
        self.push(
            None,
            json!({
                "type": "run",
                "profile": info.profile,
                "engine": info.engine,
                "target": info.target,
                "started_at": info.started_at,
                "controller": info.hostname,
                "interval_s": info.interval_s,
                "warmup_s": info.warmup_s,
                "start_skew_ms": info.start_skew_ms,
            }),
        );
    }

    fn notice(&mut self, msg: &str) {
        self.push(None, json!({ "type": "notice", "message": msg }));
    }

    fn phase(&mut self, phase: Phase, planned_s: f64) {
        let name = match phase {
            Phase::Prepare => "prepare",
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            // One round or step of several ended; the command's end is `end`'s.
            Phase::Done if self.stepped => "step-done",
            Phase::Done => "done",
        };
        self.push(
            None,
            json!({ "type": "phase", "phase": name, "planned_s": planned_s }),
        );
        if phase == Phase::Done && !self.stepped {
            self.shared.lock().done = true;
            self.shared.news.notify_all();
        }
    }

    fn prepare_progress(&mut self, done: u64, total: u64) {
        self.push(
            Some(Latest::Prepare),
            json!({ "type": "prepare", "done": done, "total": total }),
        );
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        let r = snap.row;
        let warnings: Vec<String> = r
            .generator
            .as_ref()
            .map(|g| g.warnings.iter().map(|w| w.to_string()).collect())
            .unwrap_or_default();
        self.push(
            None,
            json!({
                "type": "interval",
                "index": r.index,
                "t_s": r.t_s,
                "duration_s": r.duration_s,
                "warmup": r.warmup,
                "iops": r.iops,
                "mbps": r.mbps,
                "read_iops": r.read_iops,
                "write_iops": r.write_iops,
                "p50_us": r.p50_us,
                "p99_us": r.p99_us,
                "read_p99_us": r.read_p99_us,
                "write_p99_us": r.write_p99_us,
                "errors": r.errors,
                "hosts_lost": r.hosts_lost,
                "warnings": warnings,
            }),
        );
        self.push(Some(Latest::Hosts), hosts_event(snap));
    }
}

/// The latest interval per host (IOPS, p99, workers, when it was lost, whether it fell
/// behind its peers: `Layout::interval_parts`, the result's straggler rule over this
/// interval) and per worker group (IOPS, p99, workers) when the run has several.
fn hosts_event(snap: &IntervalSnapshot<'_>) -> serde_json::Value {
    let n_streams = snap.layout.streams.len();
    let secs = snap.row.duration_s;
    let lost: Vec<bool> = snap.host_lost_s.iter().map(Option::is_some).collect();
    let relayed = Relayed {
        groups: &snap.relayed.groups,
        hosts: &snap.relayed.hosts,
    };
    let parts = snap
        .layout
        .interval_parts(snap.workers, relayed, n_streams, &lost, secs);
    let iops = |ios: u64| {
        if secs > 0.0 {
            ios as f64 / secs
        } else {
            0.0
        }
    };
    let figures = |s: &iofleet_stats::Sample| {
        let all = s.all();
        let p99 = (!all.hist.is_empty()).then(|| all.hist.quantile_ns(0.99) as f64 / 1e3);
        (iops(all.ios), p99)
    };
    // A host's figures come from its brief: of its workers' sample, or its relay's.
    let brief_figures = |b: &HostBrief| {
        let p99 = (b.all.ios > 0).then(|| b.all.p99_ns as f64 / 1e3);
        (iops(b.all.ios), p99)
    };
    let hosts: Vec<serde_json::Value> = snap
        .hosts
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (iops, p99) = parts.briefs.get(i).map_or((0.0, None), brief_figures);
            json!({
                "name": name,
                "workers": snap.worker_host.iter().filter(|&&h| h == i).count(),
                "iops": iops,
                "p99_us": p99,
                "lost_at_s": snap.host_lost_s.get(i).copied().flatten(),
                "straggler": parts.straggler.get(i).copied().unwrap_or(false),
            })
        })
        .collect();
    let groups: Vec<serde_json::Value> = if snap.layout.groups.len() > 1 {
        snap.layout
            .groups
            .iter()
            .zip(&parts.groups)
            .map(|(g, s)| {
                let (iops, p99) = figures(s);
                json!({
                    "name": g.name,
                    "profile": g.profile,
                    "workers": g.workers,
                    "iops": iops,
                    "p99_us": p99,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    json!({ "type": "hosts", "index": snap.row.index, "hosts": hosts, "groups": groups })
}

impl LiveSite {
    /// The page at `/`, the stream at `/events` (its headers alone for `HEAD`); None for
    /// other paths. `crate::web::http` answers methods other than GET and HEAD.
    pub fn answer(&self, req: &Request) -> Option<Answer> {
        match req.path.as_str() {
            "/" => Some(Answer::Page(Reply {
                status: "200 OK",
                content_type: "text/html; charset=utf-8",
                headers: PAGE_HEADERS.as_str().into(),
                body: PAGE.to_string(),
            })),
            "/events" if req.method == "HEAD" => Some(Answer::Page(Reply {
                status: "200 OK",
                content_type: "text/event-stream",
                headers: "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n".into(),
                body: String::new(),
            })),
            "/events" => {
                let shared = self.shared.clone();
                Some(Answer::Stream(Box::new(move |s| stream(&shared, s))))
            }
            "/favicon.ico" => Some(Answer::Page(Reply::plain("204 No Content", "", ""))),
            _ => None,
        }
    }
}

/// One viewer: every event so far, then each new one, until the run is done and all
/// are sent (or the viewer goes away).
fn stream(shared: &Shared, mut s: TcpStream) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
    )?;
    let id = {
        let mut h = shared.lock();
        let id = h.next_viewer;
        h.next_viewer += 1;
        h.viewers.insert(id, 0);
        id
    };
    let outcome = send_events(shared, id, &mut s);
    shared.lock().viewers.remove(&id);
    shared.progress.notify_all();
    outcome
}

fn send_events(shared: &Shared, id: u64, s: &mut TcpStream) -> std::io::Result<()> {
    let mut from = 0u64;
    let mut first = true;
    let mut last_write = Instant::now();
    loop {
        let (batch, dropped, done) = {
            let mut h = shared.lock();
            // Until there is news, or for a while (a wake-up with nothing new, spurious
            // or not, sends nothing unless a keep-alive is due).
            if h.next <= from && !h.done {
                h = shared
                    .news
                    .wait_timeout(h, HANGUP_CHECK)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            (h.since(from), h.dropped, h.done)
        };
        // A viewer that hung up is let go now, not at the next write that fails.
        if crate::web::http::peer_closed(s) {
            return Ok(());
        }
        let mut out = String::new();
        if first && dropped > 0 {
            out.push_str(&format!(
                "data: {}\n\n",
                json!({ "type": "notice", "message": format!("the first {dropped} events of this run are no longer kept (the live view keeps the last {MAX_EVENTS})") })
            ));
        }
        first = false;
        for (seq, text) in &batch {
            out.push_str(&format!("id: {seq}\ndata: {text}\n\n"));
            from = seq + 1;
        }
        if out.is_empty() && !done {
            if last_write.elapsed() < KEEPALIVE {
                continue;
            }
            out.push_str(": keep-alive\n\n");
        }
        s.write_all(out.as_bytes())?;
        s.flush()?;
        last_write = Instant::now();
        let finished = {
            let mut h = shared.lock();
            h.viewers.insert(id, from);
            done && from >= h.next
        };
        shared.progress.notify_all();
        if finished {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_every_event_and_only_the_latest_of_some() {
        let mut w = LiveWeb::new();
        w.notice("one");
        w.prepare_progress(1, 10);
        w.prepare_progress(5, 10);
        w.phase(Phase::Warmup, 2.0);
        let h = w.shared.lock();
        let all = h.since(0);
        let kinds: Vec<&str> = all.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(all.len(), 3, "{kinds:?}");
        assert!(kinds[0].contains("\"one\""));
        assert!(kinds[1].contains("\"done\":5"));
        assert!(kinds[2].contains("\"warmup\""));
        // Since a later point: only what came after.
        assert_eq!(h.since(3).len(), 1);
        assert!(!h.done);
    }

    #[test]
    fn a_command_of_rounds_is_done_once_at_its_end() {
        let mut w = LiveWeb::new();
        for k in 1..=2 {
            w.step(&Step {
                kind: crate::web::step::StepKind::Round,
                index: k,
                of: Some(25),
                at_most: true,
                label: format!("round {k}"),
                rate_iops: None,
            });
            w.phase(Phase::Measure, 1.0);
            w.phase(Phase::Done, 1.0);
            assert!(
                !w.shared.lock().done,
                "round {k}'s end is not the command's"
            );
        }
        w.end();
        w.end();
        let h = w.shared.lock();
        assert!(h.done);
        let events: Vec<serde_json::Value> = h
            .since(0)
            .iter()
            .map(|(_, t)| serde_json::from_str(t).unwrap())
            .collect();
        let said: Vec<String> = events
            .iter()
            .map(|e| match e["type"].as_str().unwrap() {
                "phase" => e["phase"].as_str().unwrap().to_string(),
                "step" => format!("{} {}", e["kind"].as_str().unwrap(), e["index"]),
                other => other.to_string(),
            })
            .collect();
        assert_eq!(
            said,
            [
                "round 1",
                "measure",
                "step-done",
                "round 2",
                "measure",
                "step-done",
                "done"
            ]
        );
        assert_eq!(events[0]["of"], 25);
        assert_eq!(events[0]["at_most"], true);
        assert_eq!(events[0]["label"], "round 1");
        assert_eq!(events[0]["rate_iops"], serde_json::Value::Null);
    }

    #[test]
    fn a_run_without_steps_is_done_at_its_end() {
        let mut w = LiveWeb::new();
        w.phase(Phase::Measure, 1.0);
        w.phase(Phase::Done, 1.0);
        assert!(w.shared.lock().done);
        // The command's end adds nothing.
        w.end();
        let h = w.shared.lock();
        assert_eq!(h.since(0).len(), 2);
        assert!(h.since(0)[1].1.contains("\"done\""));
    }

    #[test]
    fn history_is_bounded() {
        let mut w = LiveWeb::new();
        w.objectives(&["p99<=3ms".parse().unwrap()]);
        for i in 0..MAX_EVENTS + 5 {
            w.notice(&i.to_string());
        }
        let h = w.shared.lock();
        assert_eq!(h.events.len(), MAX_EVENTS);
        assert_eq!(h.dropped, 5);
        assert!(h.events[0].1.contains("\"5\""));
        // The objectives, sent first, are kept and still come first.
        let all = h.since(0);
        assert!(all[0].1.contains("\"objectives\""), "{}", all[0].1);
        assert_eq!(all.len(), MAX_EVENTS + 1);
    }

    /// Hosts b and c below a relay (their workers zero here, the group's sample and
    /// their briefs relayed): the live view's host and group strips are the flat ones.
    #[test]
    fn hosts_below_a_relay_have_the_flat_strips() {
        use iofleet_fleet::observer::RelayedParts;
        use iofleet_stats::fold::{GroupRange, Layout};
        use iofleet_stats::result::IntervalRow;
        use iofleet_stats::Sample;
        let reads = |ios: u64, lat_ns: u64| {
            let mut s = Sample::new(1);
            (0..ios).for_each(|_| s.streams[0].read.record(lat_ns, 4096));
            s
        };
        let group = |name: &str, first: u32| GroupRange {
            name: name.into(),
            profile: "p".into(),
            first,
            workers: 2,
            rate_per_worker: None,
        };
        let layout = Layout {
            streams: vec!["s".into()],
            hosts: vec!["a".into(), "b".into(), "c".into()],
            worker_base: 0,
            worker_host: vec![0, 1, 2, 2],
            groups: vec![group("g", 0), group("h", 2)],
        };
        // Host b delivers half of what a does: a straggler in group g.
        let workers = [
            reads(100, 1_000),
            reads(50, 2_000),
            reads(80, 3_000),
            reads(90, 9_000),
        ];
        let mut below = vec![workers[0].clone()];
        below.resize(4, Sample::new(1));
        let (g, mut h) = (workers[1].clone(), workers[2].clone());
        h += &workers[3];
        let relayed = RelayedParts {
            groups: vec![g, h.clone()],
            hosts: vec![
                HostBrief::of(1, &workers[1], None),
                HostBrief::of(2, &h, None),
            ],
        };
        let row = IntervalRow::from_sample(3, 1.5, 0.5, false, 0, &Sample::new(1));
        let hosts = layout.hosts.clone();
        let snap = |workers, relayed| IntervalSnapshot {
            row: &row,
            workers,
            disks: &[],
            hosts: &hosts,
            worker_host: &layout.worker_host,
            usage: &[],
            generator: None,
            host_lost_s: &[None, None, None],
            layout: &layout,
            relayed,
            stopped_at: None,
            ran_through: false,
        };
        let (workers, below): (&[Sample], &[Sample]) = (&workers, &below);
        let nothing = RelayedParts::default();
        let flat = hosts_event(&snap(workers, &nothing));
        let tree = hosts_event(&snap(below, &relayed));
        assert_eq!(tree, flat);
        assert_eq!(tree["hosts"][1]["iops"], 100.0);
        assert_eq!(tree["hosts"][1]["straggler"], true);
        assert_eq!(tree["hosts"][2]["workers"], 2);
        assert_eq!(tree["groups"][1]["iops"], 340.0);
    }
}
