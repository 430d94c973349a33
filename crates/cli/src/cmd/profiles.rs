//! `iofleet profiles list|show|reference|from-trace|from-fio|from-diskspd|from-vdbench`
//! (also spelled `iofleet profile`). Fitting a trace is `iofleet_import::trace`, mapping a
//! fio job file `iofleet_import::fio`, a DISKSPD command line `iofleet_import::diskspd`
//! and a vdbench parameter file `iofleet_import::vdbench`; this file
//! reads the input and writes the profiles.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use iofleet_import::trace::{self, FitOptions, TraceFormat};

use crate::args::duration;
use crate::exit::Exit;

#[derive(Subcommand, Debug)]
pub enum ProfilesCmd {
    /// List the built-in profiles.
    List,
    /// Print a built-in profile's TOML, ready to copy and edit.
    Show {
        /// Built-in profile name (see `iofleet profiles list`).
        name: String,
    },
    /// Print the profile reference (docs/profiles.md) generated from the option table.
    Reference,
    /// Fit a profile to an I/O trace: block sizes, random % and hot bands per
    /// direction, read % and arrival rate (docs/traces.md).
    FromTrace(FromTraceArgs),
    /// Write the profile(s) iofleet would run for a fio job file: one per job section,
    /// with the `iofleet run --group` line that runs them together (docs/fio.md).
    FromFio(FromFioArgs),
    /// Print the profile iofleet would run for a DISKSPD command line (docs/diskspd.md).
    FromDiskspd(FromDiskspdArgs),
    /// Print the profile of each step of a vdbench parameter file, one per rd and loop
    /// value, each under a `# ---- step NAME` line (docs/vdbench.md).
    FromVdbench(FromVdbenchArgs),
}

#[derive(Args, Debug)]
pub struct FromVdbenchArgs {
    /// The vdbench parameter file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the profiles to this file. Default: stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct FromDiskspdArgs {
    /// The DISKSPD command line, quoted as one argument (the program's name may lead).
    #[arg(value_name = "ARGS", allow_hyphen_values = true)]
    pub args: String,
    /// Write the profile to this file. Default: stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct FromFioArgs {
    /// The fio job file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the profile to this file; with several jobs, STEM-JOB.EXT per job. Default:
    /// stdout, groups separated by `# ---- group NAME` lines.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the profiles without this fio option (repeatable), with a notice.
    #[arg(long, value_name = "OPTION")]
    pub fio_ignore: Vec<String>,
    /// Write only this job section's profile (repeatable), e.g. one phase of a file whose
    /// jobs are separated by stonewall.
    #[arg(long, value_name = "NAME")]
    pub fio_job: Vec<String>,
    /// Check block sizes for direct I/O (as `iofleet run --direct`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub direct: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormatArg {
    /// blkparse's default text output (queue `Q` events of reads and writes).
    Blkparse,
    /// time,op,offset,length: seconds, R/W or read/write, bytes, bytes; header optional.
    Csv,
    /// SNIA IOTTA MSR-Cambridge: Timestamp (100 ns ticks), Hostname, DiskNumber, Type,
    /// Offset, Size, ResponseTime.
    Msr,
}

#[derive(Args, Debug)]
pub struct FromTraceArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The trace's format.
    #[arg(long, value_enum)]
    pub format: TraceFormatArg,
    /// Fit one profile per window of this length (e.g. 60s), written as
    /// STEM-wNN.toml next to --output, numbered from 1 in time order.
    #[arg(long, value_parser = duration, allow_hyphen_values = true, value_name = "DURATION")]
    pub split: Option<Duration>,
    /// Write the profile to this file (required with --split); default: stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The file's name without directory and extension, for profile names.
fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "trace".to_string())
}

fn from_trace(a: FromTraceArgs) -> Result<i32, Exit> {
    if a.split == Some(std::time::Duration::ZERO) {
        return Err(Exit::input("--split: a window must be longer than 0s"));
    }
    if a.split.is_some() && a.output.is_none() {
        return Err(Exit::input(
            "--split writes one profile per window: give --output (e.g. -o boot.toml for \
             boot-w01.toml, boot-w02.toml, ...)",
        ));
    }
    let format = match a.format {
        TraceFormatArg::Blkparse => TraceFormat::Blkparse,
        TraceFormatArg::Csv => TraceFormat::Csv,
        TraceFormatArg::Msr => TraceFormat::Msr,
    };
    let origin = a.file.display().to_string();
    let file = std::fs::File::open(&a.file)
        .map_err(|e| Exit::input(format!("cannot read trace {origin}: {e}")))?;
    let ios =
        trace::parse_reader(std::io::BufReader::new(file), format, &origin).map_err(Exit::input)?;
    let opts = FitOptions {
        name: stem(a.output.as_deref().unwrap_or(&a.file)),
        source: format!("{origin} ({format})"),
        split: a.split,
    };
    let fitted = trace::fit(&ios, &opts);
    let Some(out) = &a.output else {
        print!("{}", iofleet_profile::plan_toml(&fitted[0].plan));
        return Ok(0);
    };
    for f in &fitted {
        let path = match f.window {
            None => out.clone(),
            Some(_) => {
                let ext = out
                    .extension()
                    .map(|e| format!(".{}", e.to_string_lossy()))
                    .unwrap_or_default();
                out.with_file_name(format!("{}{ext}", f.plan.name))
            }
        };
        write(&path, &iofleet_profile::plan_toml(&f.plan))?;
        eprintln!(
            "wrote {} ({} I/Os, {:.3} s to {:.3} s of the trace)",
            path.display(),
            f.ios,
            f.from_s,
            f.to_s
        );
    }
    Ok(0)
}

/// Each job of a fio job file as the profile `iofleet run` would resolve for it (every key
/// written out), with the engine and the mapping notices as comments; several jobs also
/// get the `iofleet run --group` line that runs them together.
fn from_fio(a: FromFioArgs) -> Result<i32, Exit> {
    let imp = crate::run::fio_job::load(&a.file, a.direct, &a.fio_ignore, &a.fio_job)?;
    for n in &imp.notices {
        eprintln!("note: {n}");
    }
    for d in imp.groups.iter().filter_map(|g| g.directory.as_ref()) {
        eprintln!(
            "note: fio {}: directory={}: a profile has no target; run it with --target {}",
            d.at,
            d.value,
            d.paths.join(" --target ")
        );
    }
    let ctx = iofleet_profile::Context { direct: a.direct };
    let several = imp.groups.len() > 1;
    let mut stdout = String::new();
    let mut group_args = Vec::new();
    for g in &imp.groups {
        let plan = crate::run::fio_job::resolve(g, &iofleet_profile::Overrides::default(), &ctx)?;
        let mut text = format!(
            "# iofleet profile from fio job [{}] of {} (line {}); see docs/fio.md.\n",
            g.name, g.at.file, g.at.line
        );
        if let Some(e) = g.engine {
            text.push_str(&format!("# ioengine maps to: --engine {e}\n"));
        }
        if let Some(d) = g.direct {
            text.push_str(&format!("# direct maps to: --direct={d}\n"));
        }
        text.push_str(&iofleet_profile::plan_toml(&plan));
        match &a.output {
            None => {
                if several {
                    stdout.push_str(&format!("\n# ---- group {} ----\n", g.name));
                }
                stdout.push_str(&text);
                group_args.push(format!("--group {}=FILE", g.name));
            }
            Some(out) => {
                let path = if several {
                    let ext = out
                        .extension()
                        .map(|e| format!(".{}", e.to_string_lossy()))
                        .unwrap_or_default();
                    out.with_file_name(format!("{}-{}{ext}", stem(out), g.name))
                } else {
                    out.clone()
                };
                write(&path, &text)?;
                eprintln!("wrote {}", path.display());
                group_args.push(format!("--group {}={}", g.name, path.display()));
            }
        }
    }
    print!("{stdout}");
    let engines: Vec<&str> = imp.groups.iter().filter_map(|g| g.engine).collect();
    let engine = match engines.first() {
        Some(e) if engines.iter().all(|x| x == e) => format!(" --engine {e}"),
        _ => String::new(),
    };
    if several {
        eprintln!(
            "run them together: iofleet run {}{engine}",
            group_args.join(" ")
        );
    }
    Ok(0)
}

/// A DISKSPD command line as the profile `iofleet run --diskspd` would resolve (every key
/// written out), with the direct-I/O flag and the notices as comments.
fn from_diskspd(a: FromDiskspdArgs) -> Result<i32, Exit> {
    let imp = crate::run::diskspd::load(&a.args)?;
    let ctx = iofleet_profile::Context { direct: imp.direct };
    let plan = crate::run::diskspd::resolve(&imp, &iofleet_profile::Overrides::default(), &ctx)?;
    let mut text = format!(
        "# iofleet profile from the DISKSPD command line: {}\n# see docs/diskspd.md; run it with --target DIR{}\n",
        a.args.split_whitespace().collect::<Vec<_>>().join(" "),
        if imp.direct { "" } else { " --direct false (DISKSPD caches without -Su/-Sh)" }
    );
    for n in &imp.notices {
        text.push_str(&format!("# note: {n}\n"));
        eprintln!("note: {n}");
    }
    text.push_str(&iofleet_profile::plan_toml(&plan));
    match &a.output {
        None => print!("{text}"),
        Some(out) => {
            write(out, &text)?;
            eprintln!("wrote {}", out.display());
        }
    }
    Ok(0)
}

/// Each step of a vdbench parameter file as the profile `iofleet run` would resolve for
/// it (every key written out), with the direct-I/O setting and the notices as comments.
fn from_vdbench(a: FromVdbenchArgs) -> Result<i32, Exit> {
    let imp = crate::run::vdbench::load(&a.file)?;
    let ctx = iofleet_profile::Context { direct: imp.direct };
    let mut text = format!(
        "# iofleet profiles from the vdbench parameter file {}: {} step(s)\n# see docs/vdbench.md; run them with iofleet run {} --target DIR{}\n",
        a.file.display(),
        imp.steps.len(),
        a.file.display(),
        if imp.direct { "" } else { " --direct false (vdbench caches without openflags=o_direct)" }
    );
    for n in &imp.notices {
        text.push_str(&format!("# note: {n}\n"));
        eprintln!("note: {n}");
    }
    for step in &imp.steps {
        let plan =
            crate::run::vdbench::resolve(step, &iofleet_profile::Overrides::default(), &ctx)?;
        if imp.steps.len() > 1 {
            text.push_str(&format!("# ---- step {} (rd at {})\n", step.name, step.at));
        }
        text.push_str(&iofleet_profile::plan_toml(&plan));
    }
    match &a.output {
        None => print!("{text}"),
        Some(out) => {
            write(out, &text)?;
            eprintln!("wrote {}", out.display());
        }
    }
    Ok(0)
}

fn write(path: &PathBuf, text: &str) -> Result<(), Exit> {
    std::fs::write(path, text).map_err(|e| Exit::input(format!("--output {}: {e}", path.display())))
}

pub fn run(cmd: ProfilesCmd) -> Result<i32, Exit> {
    match cmd {
        ProfilesCmd::List => {
            let names = iofleet_profile::builtin_names();
            let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
            for name in names {
                let raw = iofleet_profile::load_builtin(name).map_err(Exit::failure)?;
                let first = raw
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .split(". ")
                    .next()
                    .unwrap_or("")
                    .trim_end_matches('.')
                    .to_string();
                println!("{name:<width$}  {first}");
            }
        }
        ProfilesCmd::Show { name } => match iofleet_profile::builtin_source(&name) {
            Some(src) => print!("{src}"),
            None => {
                return Err(Exit::input(
                    iofleet_profile::load_builtin(&name)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| format!("unknown profile {name}")),
                ))
            }
        },
        ProfilesCmd::Reference => print!("{}", iofleet_profile::reference_markdown()),
        ProfilesCmd::FromTrace(a) => return from_trace(a),
        ProfilesCmd::FromFio(a) => return from_fio(a),
        ProfilesCmd::FromDiskspd(a) => return from_diskspd(a),
        ProfilesCmd::FromVdbench(a) => return from_vdbench(a),
    }
    Ok(0)
}
