//! `iofleet results list|show|export|delete|import`: browse the results store, and put
//! back runs saved to a file of their own when their store could not be written. Every figure
//! shown for a run is recomputed from its stored histograms (`Store::analyze`), so an
//! interrupted or killed run shows exactly what its committed intervals add up to.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use iofleet_report::fio_json::{self, FioFlavor, FioHists};
use iofleet_report::text::{escape, Escaped};
use iofleet_report::{Convention, CsvExporter, JsonExporter, MarkdownExporter, TableExporter};
use iofleet_store::{ListFilter, Store};

use crate::args::ConventionArg;
use crate::exit::Exit;
use crate::store::record::{parse_label, store_exit, DbArg};
use crate::store::stored::{load_run, output, write_err};

#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List stored runs, oldest first.
    List(ListArgs),
    /// Show one run: metadata, environment and its result table (with each worker's disks).
    Show {
        /// Run id (or a unique prefix of it), a unique run name, or `latest`.
        run: String,
        /// Print each table row on one line, however wide (by default tables wrap into
        /// blocks of columns that fit 120 columns).
        #[arg(long)]
        wide: bool,
        #[command(flatten)]
        conv: ConventionArg,
        #[command(flatten)]
        db: DbArg,
    },
    /// Export one run as JSON (docs/result.schema.json), CSV, Markdown or fio's JSON layout.
    Export(ExportArgs),
    /// Delete one run and everything stored with it.
    Delete {
        /// Run id (or a unique prefix of it), a unique run name, or `latest`.
        run: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Copy every run of another store file into this store (created if missing): the
    /// file a run saved itself to when its store could not be written
    /// (`results.db.unsaved/ID.db`), or another controller's store. A partial record of
    /// the same run here (what it wrote before its store failed) is replaced.
    Import {
        /// The store file to import from.
        file: PathBuf,
        #[command(flatten)]
        db: DbArg,
    },
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only runs carrying this label (KEY=VALUE); repeat to require several.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Only runs of this profile.
    #[arg(long)]
    pub profile: Option<String>,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
    /// fio's --output-format=json layout (docs/fio-json.md).
    #[value(name = "fio-json")]
    FioJson,
    /// fio's json+ layout: fio-json with latency bins.
    #[value(name = "fio-json+")]
    FioJsonPlus,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id (or a unique prefix of it), a unique run name, or `latest`.
    pub run: String,
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub conv: ConventionArg,
    #[command(flatten)]
    pub db: DbArg,
}

pub fn run(cmd: ResultsCmd) -> Result<i32, Exit> {
    match cmd {
        ResultsCmd::List(a) => list(a),
        ResultsCmd::Show {
            run,
            wide,
            conv,
            db,
        } => show(&db.open()?, &run, wide, conv.convention),
        ResultsCmd::Export(a) => {
            let store = a.db.open()?;
            let r = load_run(&store, &a.run)?;
            let mut out = output(&a.output)?;
            match a.format {
                ExportFormat::Json => {
                    JsonExporter.export_in(&r.result, a.conv.convention, &mut out)
                }
                ExportFormat::Csv => CsvExporter.export_in(&r.result, a.conv.convention, &mut out),
                ExportFormat::Markdown => {
                    MarkdownExporter.export_in(&r.result, a.conv.convention, &mut out)
                }
                ExportFormat::FioJson | ExportFormat::FioJsonPlus => {
                    let flavor = if a.format == ExportFormat::FioJson {
                        FioFlavor::Json
                    } else {
                        FioFlavor::JsonPlus
                    };
                    let hists = FioHists {
                        fleet: [&r.read_hist, &r.write_hist],
                        hosts: &r.host_hists,
                        groups: &r.group_hists,
                    };
                    fio_json::export(&r.result, Some(hists), flavor, &mut out)
                }
            }
            .and_then(|_| out.flush())
            .map_err(write_err)?;
            Ok(0)
        }
        ResultsCmd::Import { file, db } => {
            let mut store = db.open_or_create()?;
            let done = store.import(&file).map_err(store_exit)?;
            for d in &done {
                match d {
                    iofleet_store::Imported::Added {
                        id,
                        replaced: false,
                    } => {
                        println!("imported run {}", escape(id))
                    }
                    iofleet_store::Imported::Added { id, replaced: true } => {
                        println!("imported run {} (over its partial record)", escape(id))
                    }
                    iofleet_store::Imported::Unchanged { id } => {
                        println!("run {} is already here, unchanged", escape(id))
                    }
                }
            }
            println!(
                "{} run(s) from {} in {}",
                done.len(),
                file.display(),
                store.path().display()
            );
            Ok(0)
        }
        ResultsCmd::Delete { run, db } => {
            let mut store = db.open()?;
            let id = store.resolve(&run).map_err(store_exit)?;
            store.delete(&id).map_err(store_exit)?;
            println!("deleted run {id}");
            Ok(0)
        }
    }
}

fn list(a: ListArgs) -> Result<i32, Exit> {
    let store = a.db.open()?;
    let runs = store
        .list(&ListFilter {
            labels: a.labels,
            profile: a.profile,
        })
        .map_err(store_exit)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if a.json {
        // serde escapes control characters itself.
        serde_json::to_writer_pretty(&mut out, &runs)
            .map_err(|e| Exit::failure(format!("writing the list: {e}")))?;
        writeln!(out).map_err(write_err)?;
        return Ok(0);
    }
    // Every column as wide as its widest cell: names, profiles and labels are never cut,
    // and printed escaped (`pad` escapes, `width` measures the escaped text).
    let mut out = Escaped::new(out);
    let pad = iofleet_report::compare::pad_right;
    let width = iofleet_report::compare::width;
    let labels: Vec<String> = runs
        .iter()
        .map(|r| iofleet_report::labels_text(&r.meta.labels))
        .collect();
    let w = |head: &str, cell: &dyn Fn(&iofleet_store::RunListing) -> String| {
        runs.iter()
            .map(|r| width(&cell(r)))
            .chain([width(head)])
            .max()
            .unwrap_or(0)
    };
    let wid = w("id", &|r| r.meta.id.clone());
    let wstart = w("started (UTC)", &|r| r.meta.started_at.clone());
    let wstatus = w("status", &|r| status_text(&r.meta));
    let wprofile = w("profile", &|r| r.meta.profile.clone());
    let wname = w("name", &|r| r.meta.name.clone());
    let line = format!(
        "{}  {}  {}  {}  {}  {:>6}  {:>12}  {:>9}  labels",
        pad("id", wid),
        pad("started (UTC)", wstart),
        pad("status", wstatus),
        pad("profile", wprofile),
        pad("name", wname),
        "meas s",
        "IOPS",
        "MB/s"
    );
    writeln!(out, "{}", line.trim_end()).map_err(write_err)?;
    for (r, labels) in runs.iter().zip(&labels) {
        let m = &r.meta;
        let line = format!(
            "{}  {}  {}  {}  {}  {:>6.1}  {:>12.0}  {:>9.1}  {}",
            pad(&m.id, wid),
            pad(&m.started_at, wstart),
            pad(&status_text(m), wstatus),
            pad(&m.profile, wprofile),
            pad(&m.name, wname),
            r.measured_s,
            r.iops,
            r.mbps,
            escape(labels)
        );
        writeln!(out, "{}", line.trim_end()).map_err(write_err)?;
    }
    if runs.is_empty() {
        writeln!(out, "(no runs in {})", store.path().display()).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(0)
}

/// A stored run's status, with `INVALID` after it for a run below its quorum of hosts.
fn status_text(m: &iofleet_store::RunMeta) -> String {
    match m.valid {
        true => m.status.as_str().to_string(),
        false => format!("{} INVALID", m.status.as_str()),
    }
}

fn show(store: &Store, query: &str, wide: bool, convention: Convention) -> Result<i32, Exit> {
    let r = load_run(store, query)?;
    let stdout = io::stdout();
    // Whatever a stored run holds is printed escaped (`text::escape`).
    let mut out = Escaped::new(stdout.lock());
    let e = &r.environment;
    let get = |k: &str| {
        e.get(k)
            .map(|v| match v {
                serde_json::Value::String(s) => escape(s).into_owned(),
                serde_json::Value::Null => "–".into(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "–".into())
    };
    let mut text = format!(
        "run {}  name {}  status {}\nlabels: {}\nenvironment: kernel {}, CPU {} ({} cores), memory {}\n",
        escape(&r.id),
        escape(&r.name),
        r.status_text(),
        if r.labels.is_empty() {
            "(none)".to_string()
        } else {
            escape(&r.labels_text()).into_owned()
        },
        get("kernel"),
        get("cpu_model"),
        get("cores"),
        e.get("memory_bytes")
            .and_then(|v| v.as_f64())
            .map(|b| format!("{:.1} GiB", b / (1u64 << 30) as f64))
            .unwrap_or_else(|| "–".into()),
    );
    if let Some(fs) = e.get("filesystem").filter(|f| f.is_object()) {
        text.push_str(&format!(
            "filesystem: {} on {} ({})\n",
            escape(fs["fstype"].as_str().unwrap_or("?")),
            escape(fs["mount_point"].as_str().unwrap_or("?")),
            escape(fs["source"].as_str().unwrap_or("?"))
        ));
    }
    for d in e
        .get("devices")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
    {
        text.push_str(&format!(
            "device: {} model {} size {}\n",
            escape(d["name"].as_str().unwrap_or("?")),
            escape(d["model"].as_str().unwrap_or("–")),
            d["size_bytes"]
                .as_u64()
                .map(|b| format!("{:.1} GB", b as f64 / 1e9))
                .unwrap_or_else(|| "–".into())
        ));
    }
    out.write_all(text.as_bytes()).map_err(write_err)?;
    writeln!(out).map_err(write_err)?;
    // The identity is printed above; the table need not repeat it.
    let mut result = r.result;
    result.stored = None;
    TableExporter {
        intervals: false,
        wide,
        disks: true,
    }
    .export_in(&result, convention, &mut out)
    .map_err(write_err)?;
    out.flush().map_err(write_err)?;
    Ok(0)
}
