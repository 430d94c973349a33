//! The pages of `iofleet serve` that are not reports: the runs list (a filter form, a
//! table of runs with boxes to tick for a comparison, and links to each sweep's and
//! find-max's curve) and a short message page for errors. A run's page, a comparison
//! and a curve are `html::report` itself, so the browser shows what `iofleet report`
//! writes. Self-contained like the reports: inline style, no script, no external
//! resource; every link is a path on the server. Which runs are listed is decided by
//! the caller; this module only lays them out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::html::BASE_STYLE;
use crate::markup::escape;

/// One row of the runs list.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedRun {
    pub id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub profile: String,
    pub engine: String,
    pub started_at: String,
    /// complete, hosts-lost, interrupted, incomplete or running.
    pub status: String,
    /// False for a run below its quorum of hosts: listed as INVALID after its status.
    pub valid: bool,
    pub measured_s: f64,
    pub iops: f64,
    pub mbps: f64,
}

/// The filters as the user typed them (shown again in the form).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListFilter {
    /// Part of the run's name, any case.
    pub name: String,
    /// Space-separated `KEY=VALUE` or `KEY` terms, all of which a run's labels match.
    pub label: String,
    /// The profile, exactly; empty for any.
    pub profile: String,
    /// One of `STATUSES`; empty for any.
    pub status: String,
}

/// The statuses a run can be listed with, in the filter's order.
pub const STATUSES: [&str; 5] = [
    "complete",
    "hosts-lost",
    "interrupted",
    "incomplete",
    "running",
];

/// A sweep's or find-max's runs, linked to their curve.
#[derive(Clone, Debug, PartialEq)]
pub struct CurveLink {
    /// The label that groups its steps: `sweep` or `findmax`.
    pub label: &'static str,
    pub name: String,
    pub steps: usize,
}

impl CurveLink {
    /// The path of its page on the server.
    pub fn href(&self) -> String {
        format!("/curve?{}={}", self.label, query_escape(&self.name))
    }
}

/// Escape a query-string value (everything but unreserved characters).
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

const STYLE: &str = r#"
form.filter { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: end; }
form.filter label { display: flex; flex-direction: column; font-size: 13px; color: #4b5563; }
input, select, button { font: inherit; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px 0; width: 100%; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 6px; text-align: right; }
th { background: #f3f4f6; font-weight: 600; }
td.l, th.l { text-align: left; overflow-wrap: anywhere; }
.warn { color: #b45309; }
a { color: #1d4ed8; }
td code { white-space: nowrap; }
footer { font-size: 12px; color: #6b7280; padding: 0 32px 24px 32px; }
@media (max-width: 900px) { main { padding: 8px 10px 24px 10px; } section { padding: 8px 10px; } header { padding: 12px 14px; } .wide { display: none; } }
"#;

fn head(h: &mut String, title: &str, subtitle: &str) {
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{t}</title>\n<style>{BASE_STYLE}{STYLE}</style>\n</head>\n<body>\n<header><h1>{t}</h1><p>{}</p></header>\n<main>",
        escape(subtitle),
        t = escape(title),
    );
}

fn foot(h: &mut String) {
    h.push_str("</main>\n<footer>iofleet serve · the results store, read-only · figures recomputed from the stored histograms</footer>\n</body>\n</html>\n");
}

/// The runs list: `runs` (already filtered) of `total` in the store, the filter form
/// showing `filter`, the profiles to choose from, and the curves.
pub fn runs_page(
    runs: &[ListedRun],
    total: usize,
    filter: &ListFilter,
    profiles: &[String],
    curves: &[CurveLink],
    store: &str,
) -> String {
    let mut h = String::new();
    head(&mut h, "iofleet runs", &format!("results store {store}"));
    filter_form(&mut h, filter, profiles);
    runs_table(&mut h, runs, total);
    if !curves.is_empty() {
        h.push_str("<section id=\"curves\"><h2>Sweeps and find-max searches</h2><ul>\n");
        for c in curves {
            let _ = writeln!(
                h,
                "<li><a href=\"{}\">{} {}</a> · {} step{}</li>",
                escape(&c.href()),
                if c.label == "sweep" {
                    "sweep"
                } else {
                    "find-max"
                },
                escape(&c.name),
                c.steps,
                if c.steps == 1 { "" } else { "s" }
            );
        }
        h.push_str("</ul></section>\n");
    }
    foot(&mut h);
    h
}

fn filter_form(h: &mut String, f: &ListFilter, profiles: &[String]) {
    h.push_str("<section id=\"filter\"><h2>Filter</h2><form class=\"filter\" method=\"get\" action=\"/\">\n");
    let _ = writeln!(
        h,
        "<label>name contains<input type=\"text\" name=\"name\" value=\"{}\"></label>",
        escape(&f.name)
    );
    let _ = writeln!(
        h,
        "<label>labels (KEY=VALUE or KEY, all must match)<input type=\"text\" name=\"label\" value=\"{}\"></label>",
        escape(&f.label)
    );
    h.push_str("<label>profile<select name=\"profile\"><option value=\"\">any</option>");
    for p in profiles {
        let _ = write!(
            h,
            "<option{}>{}</option>",
            if *p == f.profile { " selected" } else { "" },
            escape(p)
        );
    }
    h.push_str(
        "</select></label>\n<label>status<select name=\"status\"><option value=\"\">any</option>",
    );
    for s in STATUSES {
        let _ = write!(
            h,
            "<option{}>{s}</option>",
            if s == f.status { " selected" } else { "" }
        );
    }
    h.push_str("</select></label>\n<button type=\"submit\" id=\"apply\">Apply</button> <a href=\"/\">clear</a>\n</form></section>\n");
}

fn runs_table(h: &mut String, runs: &[ListedRun], total: usize) {
    let _ = writeln!(
        h,
        "<section id=\"runs\"><h2>Runs</h2><p id=\"count\">{} of {} run{}. Tick two or more to compare them; the baseline is the one marked so, else the oldest ticked.</p>",
        runs.len(),
        total,
        if total == 1 { "" } else { "s" }
    );
    h.push_str("<form id=\"compare\" method=\"get\" action=\"/compare\"><button type=\"submit\" id=\"compare-button\">Compare selected</button></form>\n");
    h.push_str("<table id=\"runs-table\">\n<tr><th class=\"l\">compare</th><th class=\"l\">baseline</th><th class=\"l\">run</th><th class=\"l\">name</th><th class=\"l\">labels</th><th class=\"l\">profile</th><th class=\"l wide\">engine</th><th class=\"l\">status</th><th class=\"l wide\">started (UTC)</th><th class=\"wide\">measured s</th><th>IOPS</th><th>MB/s</th></tr>\n");
    for r in runs {
        let labels = r
            .labels
            .iter()
            .map(|(k, v)| escape(&format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ");
        let status = match (r.status.as_str(), r.valid) {
            ("complete", true) => escape(&r.status),
            (_, true) => format!("<span class=\"warn\">{}</span>", escape(&r.status)),
            (_, false) => format!("<span class=\"warn\">{} INVALID</span>", escape(&r.status)),
        };
        let _ = writeln!(
            h,
            "<tr data-run=\"{id}\"><td class=\"l\"><input type=\"checkbox\" name=\"run\" value=\"{id}\" form=\"compare\" aria-label=\"compare {id}\"></td><td class=\"l\"><input type=\"radio\" name=\"baseline\" value=\"{id}\" form=\"compare\" aria-label=\"baseline {id}\"></td><td class=\"l\"><a href=\"/run/{id}\"><code>{id}</code></a></td><td class=\"l\">{}</td><td class=\"l\">{labels}</td><td class=\"l\">{}</td><td class=\"l wide\">{}</td><td class=\"l\">{status}</td><td class=\"l wide\">{}</td><td class=\"wide\">{:.1}</td><td>{:.0}</td><td>{:.1}</td></tr>",
            escape(&r.name),
            escape(&r.profile),
            escape(&r.engine),
            escape(&r.started_at),
            r.measured_s,
            r.iops,
            r.mbps,
            id = escape(&r.id),
        );
    }
    h.push_str("</table></section>\n");
}

/// A page saying `message` under `title` (not found, a bad query, a store error).
pub fn message_page(title: &str, message: &str) -> String {
    let mut h = String::new();
    head(&mut h, title, "iofleet serve");
    let _ = writeln!(
        h,
        "<section id=\"message\"><p>{}</p><p><a href=\"/\">all runs</a></p></section>",
        escape(message)
    );
    foot(&mut h);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, name: &str, status: &str) -> ListedRun {
        ListedRun {
            id: id.into(),
            name: name.into(),
            labels: [("policy".to_string(), "raid<5>".to_string())].into(),
            profile: "easy-run-4k70r".into(),
            engine: "null".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            status: status.into(),
            valid: true,
            measured_s: 1.0,
            iops: 12345.4,
            mbps: 50.56,
        }
    }

    #[test]
    fn lists_runs_with_links_boxes_and_the_filter_shown_again() {
        let f = ListFilter {
            name: "a\"b".into(),
            status: "incomplete".into(),
            profile: "easy-run-4k70r".into(),
            ..Default::default()
        };
        let curves = [CurveLink {
            label: "sweep",
            name: "qd & more".into(),
            steps: 3,
        }];
        let invalid = ListedRun {
            valid: false,
            ..run("9f8e7d6c", "lost", "hosts-lost")
        };
        let h = runs_page(
            &[run("0a1b2c3d", "<b>", "incomplete"), invalid],
            4,
            &f,
            &["easy-run-4k70r".into(), "other".into()],
            &curves,
            "/x/results.db",
        );
        assert!(h.contains("<a href=\"/run/0a1b2c3d\"><code>0a1b2c3d</code></a>"));
        assert!(h.contains("value=\"0a1b2c3d\" form=\"compare\""));
        assert!(h.contains("&lt;b&gt;") && !h.contains("<b>"));
        assert!(h.contains("policy=raid&lt;5&gt;"));
        assert!(h.contains("value=\"a&quot;b\""));
        assert!(h.contains("<option selected>incomplete</option>"));
        assert!(h.contains("<option selected>easy-run-4k70r</option><option>other</option>"));
        assert!(h.contains("<span class=\"warn\">incomplete</span>"));
        assert!(h.contains("<span class=\"warn\">hosts-lost INVALID</span>"));
        assert!(h.contains("<td>12345</td><td>50.6</td>"));
        assert!(h.contains("2 of 4 runs"));
        assert!(h.contains("href=\"/curve?sweep=qd%20%26%20more\""));
        assert!(!h.contains("http") && !h.contains("<script") && !h.contains("src="));
    }

    #[test]
    fn message_page_escapes() {
        let h = message_page("Not found", "run '<x>' not found");
        assert!(h.contains("run &#39;&lt;x&gt;&#39; not found"));
    }
}
