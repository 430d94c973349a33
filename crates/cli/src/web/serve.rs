//! The pages of `iofleet serve`, one function per path: `/` the runs list (filters `name`,
//! `label`, `profile`, `status` as query parameters), `/run/RUN` a run's report,
//! `/compare?run=A&run=B[&baseline=RUN]` a comparison (without a baseline, the oldest
//! run is the baseline and the runs go oldest first; an invalid baseline is refused, as
//! `iofleet compare` refuses it), `/curve?sweep=NAME` (or
//! `findmax=NAME`) the report over a sweep's or find-max's steps with its curve. Reports
//! are `iofleet_report::html::report`, the same HTML `iofleet report` writes. Each
//! request opens the store read-only (`Store::open_read_only`), so a page never writes
//! and never waits for a recording run. Every page carries a Content-Security-Policy
//! that lets the browser fetch nothing but the server itself and run no script but the
//! report's own (by its hash). Who may ask is `crate::web::access`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use iofleet_report::browse::{self, CurveLink, ListFilter, ListedRun};
use iofleet_report::Convention;
use iofleet_store::{RunListing, Store, StoreError};

use crate::store::stored::{check_baseline, load_runs_in};
use crate::web::http::{Reply, Request};

const HTML: &str = "text/html; charset=utf-8";

/// Headers of every page of `iofleet serve`: its pages' one script is the report's.
static PAGE_HEADERS: LazyLock<String> =
    LazyLock::new(|| page_headers(&[iofleet_report::html::CHECK_SCRIPT]));

/// Headers of a page whose inline scripts are `scripts` (each the exact text between
/// `<script>` and `</script>`): nothing but this server may be fetched, no script runs
/// but those (by their SHA-256, so a script that escaping let slip into a page would
/// not), inline style and `data:` images are allowed; no framing, no referrer. The
/// hashes come from the program's own scripts, never from a page's text.
pub fn page_headers(scripts: &[&str]) -> String {
    let hashes: Vec<String> = scripts
        .iter()
        .map(|s| format!("'sha256-{}'", STANDARD.encode(Sha256::digest(s.as_bytes()))))
        .collect();
    let script_src = match hashes.is_empty() {
        true => "'none'".to_string(),
        false => hashes.join(" "),
    };
    format!(
        "Content-Security-Policy: default-src 'self'; script-src {script_src}; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\n"
    )
}

/// The inline scripts of a page of the program's own (`<script>` without attributes).
pub fn inline_scripts(page: &str) -> Vec<&str> {
    page.split("<script>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</script>").map(|(script, _)| script))
        .collect()
}

/// A page that could not be made: its status, title and message.
#[derive(Debug)]
struct Failure {
    status: &'static str,
    title: &'static str,
    message: String,
}

impl Failure {
    fn bad(message: impl Into<String>) -> Failure {
        Failure {
            status: "400 Bad Request",
            title: "Bad request",
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> Failure {
        Failure {
            status: "404 Not Found",
            title: "Not found",
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Failure {
        Failure {
            status: "500 Internal Server Error",
            title: "Error",
            message: message.into(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        match e {
            StoreError::NotFound { .. } | StoreError::Empty => Failure::not_found(e.to_string()),
            StoreError::Ambiguous { .. } => Failure::bad(e.to_string()),
            e => Failure::internal(e.to_string()),
        }
    }
}

/// The site over one results store.
pub struct Site {
    db: PathBuf,
}

impl Site {
    pub fn new(db: PathBuf) -> Site {
        Site { db }
    }

    /// The answer to one GET or HEAD request (`crate::web::http` answers other methods).
    pub fn respond(&self, req: &Request) -> Reply {
        let page = match req.path.as_str() {
            // Browsers ask for it on every page; no icon, and no error in their console.
            "/favicon.ico" => return Reply::plain("204 No Content", "", ""),
            "/" => self.runs(req),
            "/compare" => self.compare(req),
            "/curve" => self.curve(req),
            p => match p.strip_prefix("/run/") {
                Some(run) if !run.is_empty() => self.run(&crate::web::http::decode_path(run)),
                _ => Err(Failure::not_found(format!(
                    "no page at {p}: the runs are listed at /"
                ))),
            },
        };
        match page {
            Ok(body) => Reply {
                status: "200 OK",
                content_type: HTML,
                headers: PAGE_HEADERS.as_str().into(),
                body,
            },
            Err(f) => Reply {
                status: f.status,
                content_type: HTML,
                headers: PAGE_HEADERS.as_str().into(),
                body: browse::message_page(f.title, &f.message),
            },
        }
    }

    fn open(&self) -> Result<Store, Failure> {
        Ok(Store::open_read_only(&self.db)?)
    }

    /// `/`: the runs, newest first, filtered.
    fn runs(&self, req: &Request) -> Result<String, Failure> {
        let mut filter = ListFilter::default();
        for (k, v) in req.params() {
            let v = v.trim().to_string();
            match k.as_str() {
                "name" => filter.name = v,
                "label" => filter.label = v,
                "profile" => filter.profile = v,
                "status" if v.is_empty() || browse::STATUSES.contains(&v.as_str()) => {
                    filter.status = v
                }
                "status" => {
                    return Err(Failure::bad(format!(
                        "status '{v}' is not one of {}",
                        browse::STATUSES.join(", ")
                    )))
                }
                k => {
                    return Err(Failure::bad(format!(
                        "unknown query parameter '{k}': the runs list takes name, label, profile and status"
                    )))
                }
            }
        }
        let store = self.open()?;
        let all = store.list(&iofleet_store::ListFilter::default())?;
        let mut profiles: Vec<String> = all.iter().map(|r| r.meta.profile.clone()).collect();
        profiles.sort();
        profiles.dedup();
        let shown: Vec<ListedRun> = all
            .iter()
            .rev()
            .filter(|r| matches(r, &filter))
            .map(listed)
            .collect();
        Ok(browse::runs_page(
            &shown,
            all.len(),
            &filter,
            &profiles,
            &curves(&all),
            &self.db.display().to_string(),
        ))
    }

    /// `/run/RUN`: one run's report.
    fn run(&self, query: &str) -> Result<String, Failure> {
        let store = self.open()?;
        let id = store.resolve(query)?;
        let (runs, _) =
            load_runs_in(&store, std::slice::from_ref(&id), None).map_err(exit_failure)?;
        report(&runs, 0, &format!("iofleet run {id}"))
    }

    /// `/compare?run=A&run=B[&baseline=RUN]`: two or more runs against a baseline.
    fn compare(&self, req: &Request) -> Result<String, Failure> {
        let mut ids: Vec<String> = Vec::new();
        let mut baseline = None;
        let store = self.open()?;
        for (k, v) in req.params() {
            match k.as_str() {
                "run" => {
                    let id = store.resolve(&v)?;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                "baseline" if !v.is_empty() => baseline = Some(store.resolve(&v)?),
                "baseline" => {}
                k => {
                    return Err(Failure::bad(format!(
                        "unknown query parameter '{k}': a comparison takes run (twice or more) and baseline"
                    )))
                }
            }
        }
        if ids.len() + usize::from(baseline.as_ref().is_some_and(|b| !ids.contains(b))) < 2 {
            return Err(Failure::bad(
                "tick two or more runs to compare (query parameter run, once per run)",
            ));
        }
        if baseline.is_none() {
            // The list shows the newest first, and a form sends ticked boxes in page
            // order: without a chosen baseline, the oldest ticked run is the baseline and
            // the runs go oldest first, as `iofleet report OLD NEW` would.
            let mut started = Vec::with_capacity(ids.len());
            for id in &ids {
                started.push((store.meta(id)?.started_at, id.clone()));
            }
            started.sort();
            ids = started.into_iter().map(|(_, id)| id).collect();
        }
        let (runs, base) = load_runs_in(&store, &ids, baseline.as_deref()).map_err(exit_failure)?;
        check_baseline(
            &runs,
            base,
            "mark a valid run as the baseline (an invalid run may be compared, not compared against)",
        )
        .map_err(exit_failure)?;
        report(
            &runs,
            base,
            &format!("iofleet comparison of {} runs", runs.len()),
        )
    }

    /// `/curve?sweep=NAME` or `/curve?findmax=NAME`: the report over its steps.
    fn curve(&self, req: &Request) -> Result<String, Failure> {
        let params = req.params();
        let [(label, name)] = params.as_slice() else {
            return Err(Failure::bad(
                "a curve takes one query parameter: sweep=NAME or findmax=NAME",
            ));
        };
        let what = match label.as_str() {
            "sweep" => "sweep",
            "findmax" => "find-max",
            k => {
                return Err(Failure::bad(format!(
                    "unknown query parameter '{k}': a curve takes sweep=NAME or findmax=NAME"
                )))
            }
        };
        let store = self.open()?;
        let steps = store.list(&iofleet_store::ListFilter {
            labels: vec![(label.clone(), name.clone())],
            profile: None,
        })?;
        if steps.is_empty() {
            return Err(Failure::not_found(format!(
                "no {what} named '{name}' in the store"
            )));
        }
        let ids: Vec<String> = steps.into_iter().map(|r| r.meta.id).collect();
        let (runs, _) = load_runs_in(&store, &ids, None).map_err(exit_failure)?;
        report(&runs, 0, &format!("iofleet {what} {name}"))
    }
}

/// A report page with a link back to the runs list.
fn report(
    runs: &[iofleet_report::RunData],
    baseline: usize,
    title: &str,
) -> Result<String, Failure> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let page = iofleet_report::html::report(
        runs,
        baseline,
        title,
        &iofleet_fleet::sys::rfc3339(now),
        Convention::Exact,
    )
    .map_err(|e| Failure::internal(e.to_string()))?;
    Ok(page.replacen(
        "<body>",
        "<body>\n<nav style=\"padding: 6px 32px; font-size: 14px;\"><a href=\"/\">← all runs</a></nav>",
        1,
    ))
}

fn exit_failure(e: crate::exit::Exit) -> Failure {
    if e.code == 2 {
        Failure::bad(e.message)
    } else {
        Failure::internal(e.message)
    }
}

/// Whether a listed run passes the filter.
fn matches(r: &RunListing, f: &ListFilter) -> bool {
    let m = &r.meta;
    (f.name.is_empty() || m.name.to_lowercase().contains(&f.name.to_lowercase()))
        && (f.profile.is_empty() || m.profile == f.profile)
        && (f.status.is_empty() || m.status.as_str() == f.status)
        && f.label
            .split_whitespace()
            .all(|term| match term.split_once('=') {
                Some((k, v)) => m.labels.get(k).is_some_and(|x| x == v),
                None => m.labels.contains_key(term),
            })
}

fn listed(r: &RunListing) -> ListedRun {
    let m = &r.meta;
    ListedRun {
        id: m.id.clone(),
        name: m.name.clone(),
        labels: m.labels.clone(),
        profile: m.profile.clone(),
        engine: m.engine.clone(),
        started_at: m.started_at.clone(),
        status: m.status.as_str().to_string(),
        valid: m.valid,
        measured_s: r.measured_s,
        iops: r.iops,
        mbps: r.mbps,
    }
}

/// The sweeps and find-max searches among the runs, in the order they began.
fn curves(all: &[RunListing]) -> Vec<CurveLink> {
    let mut out: Vec<CurveLink> = Vec::new();
    let mut index: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in all {
        for label in ["sweep", "findmax"] {
            if let Some(name) = r.meta.labels.get(label) {
                match index.get(&(label, name.as_str())) {
                    Some(&i) => out[i].steps += 1,
                    None => {
                        index.insert((label, name.as_str()), out.len());
                        out.push(CurveLink {
                            label,
                            name: name.clone(),
                            steps: 1,
                        });
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_allow_their_own_scripts_by_hash_and_no_other() {
        assert_eq!(
            inline_scripts("<p><script>a()</script> <script>\nb\n</script><script src=x>"),
            ["a()", "\nb\n"]
        );
        // SHA-256 of nothing, in base64, as CSP writes it.
        let empty = page_headers(&[""]);
        assert!(
            empty.contains("script-src 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=';"),
            "{empty}"
        );
        assert!(page_headers(&[]).contains("script-src 'none';"));
        assert!(!PAGE_HEADERS.contains("script-src 'unsafe-inline'"));
        let two = page_headers(&["a", "b"]);
        assert_eq!(two.matches("'sha256-").count(), 2, "{two}");
    }
}
