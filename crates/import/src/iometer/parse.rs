//! The grammar of an Iometer configuration file (.icf), as Iometer 1.1.0 and the dated
//! releases since 1998.05.21 write it: a `Version X` line, then sections, each opened by
//! a comment line in capitals (`'TEST SETUP ====`, `'RESULTS DISPLAY ====`,
//! `'ACCESS SPECIFICATIONS ====`, `'MANAGER LIST ====`) and closed by its `'END ...`
//! line, then the `Version X` line again. Inside a section, a comment line (starting
//! with `'`) names a setting and the next line that is not a comment holds its value
//! (comment lines between them are column headings, a `'` and the columns' names);
//! an access specification's lines are comma-separated numbers under its
//! `'size,% of size,% reads,% random,delay,burst,align,reply` heading. Names and keys
//! compare without regard to case, and leading and trailing blanks are not part of a
//! line.
//!
//! This reads structure and numbers only; what a setting means is `map`'s.

use crate::fio::Location;

use super::IometerError;

/// The heading of an access specification's lines, and the fields each line holds.
pub const SPEC_HEADING: &str = "'size,% of size,% reads,% random,delay,burst,align,reply";
const SPEC_FIELDS: usize = 8;

/// One setting as written: the comment naming it (without its `'`), its value line and
/// where the value was written (the comment's line when the value is missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub key: String,
    pub value: String,
    pub at: Location,
    /// Where the setting's name was written.
    pub key_at: Location,
}

/// One line of an access specification: the eight numbers in the order of
/// [`SPEC_HEADING`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecLine {
    pub size: i64,
    pub pct: i64,
    pub reads: i64,
    pub random: i64,
    pub delay: i64,
    pub burst: i64,
    pub align: i64,
    pub reply: i64,
    pub at: Location,
}

/// An access specification: its name, its default assignment as written (`NONE`,
/// `ALL`, `DISK`, `NET` or a number), and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub assignment: String,
    pub at: Location,
    pub lines: Vec<SpecLine>,
}

/// A target of a worker: its name and type as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub kind: String,
    pub at: Location,
}

/// A worker of a manager: its name, type, default target settings, and (when the file
/// holds them) its assigned access specifications and targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub name: String,
    pub at: Location,
    pub kind: Option<Pair>,
    pub settings: Vec<Pair>,
    pub specs: Option<Vec<(String, Location)>>,
    pub targets: Option<Vec<Target>>,
}

/// A manager (an Iometer host): its id and name as written, and its workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manager {
    pub name: String,
    pub at: Location,
    pub workers: Vec<Worker>,
}

/// A configuration file: its version, the test setup's settings, the access
/// specifications, and the managers (None when the file has no manager list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Icf {
    pub version: String,
    pub version_at: Option<Location>,
    pub setup: Vec<Pair>,
    pub specs: Vec<Spec>,
    pub managers: Option<Vec<Manager>>,
    /// Where the results display section is (its settings change nothing of the I/O).
    pub display_at: Option<Location>,
}

/// The file's lines, trimmed, with where each is.
struct Lines<'a> {
    file: &'a str,
    lines: Vec<&'a str>,
    next: usize,
}

fn is_comment(line: &str) -> bool {
    line.starts_with('\'')
}

/// `line` starts with `word`, regardless of case.
fn starts(line: &str, word: &str) -> bool {
    line.len() >= word.len()
        && line.is_char_boundary(word.len())
        && line[..word.len()].eq_ignore_ascii_case(word)
}

fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl<'a> Lines<'a> {
    fn at(&self, index: usize) -> Location {
        Location {
            file: self.file.to_string(),
            line: index + 1,
            included: false,
        }
    }

    /// Where the line last read is.
    fn here(&self) -> Location {
        self.at(self.next.saturating_sub(1))
    }

    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.next).copied()
    }

    /// The next line, blank or not.
    fn take(&mut self) -> Option<&'a str> {
        let l = self.peek()?;
        self.next += 1;
        Some(l)
    }

    /// The next line that is not blank.
    fn take_filled(&mut self) -> Option<&'a str> {
        while let Some(l) = self.take() {
            if !l.is_empty() {
                return Some(l);
            }
        }
        None
    }

    /// The next line that is not blank, which must be a comment (a setting's name or an
    /// end line) of the section `what`.
    fn comment(&mut self, what: &str) -> Result<&'a str, IometerError> {
        match self.take_filled() {
            Some(l) if is_comment(l) => Ok(l),
            Some(l) => Err(IometerError::syntax(
                &self.here(),
                format!("'{l}': expected a setting's name (a line starting with ') in the {what}"),
            )),
            None => Err(IometerError::syntax(
                &self.here(),
                format!("the file ends inside the {what} (its 'END line is missing)"),
            )),
        }
    }

    /// The value of the setting whose name was just read: the next line that is not a
    /// comment (column headings between are skipped). An end line before any value
    /// means the value is empty; it is left for the caller.
    fn value(&mut self, key: &str) -> Pair {
        let key_at = self.here();
        while let Some(l) = self.peek() {
            if !is_comment(l) {
                self.next += 1;
                return Pair {
                    key: key.trim_start_matches('\'').trim().to_string(),
                    value: l.to_string(),
                    at: self.here(),
                    key_at,
                };
            }
            if starts(l, "'end") || starts(l, "'version") {
                break;
            }
            self.next += 1;
        }
        Pair {
            key: key.trim_start_matches('\'').trim().to_string(),
            value: String::new(),
            at: key_at.clone(),
            key_at,
        }
    }
}

/// Parse the text of a configuration file named `file` (for locations).
pub fn parse_text(text: &str, file: &str) -> Result<Icf, IometerError> {
    let mut l = Lines {
        file,
        // A byte-order mark, as an editor may save one, is not part of the first line.
        lines: text
            .trim_start_matches('\u{feff}')
            .lines()
            .map(str::trim)
            .collect(),
        next: 0,
    };
    let mut icf = Icf::default();
    let Some(first) = l.take_filled() else {
        return Err(IometerError::syntax(
            &l.at(0),
            "the file is empty; an Iometer configuration file starts with its 'Version' line",
        ));
    };
    let Some(v) = first.get(..7).filter(|v| same(v, "version")) else {
        return Err(IometerError::syntax(
            &l.here(),
            format!("'{first}': an Iometer configuration file starts with its 'Version X' line"),
        ));
    };
    icf.version = first[v.len()..].trim().to_string();
    icf.version_at = Some(l.here());
    while let Some(line) = l.take_filled() {
        if starts(line, "'TEST SETUP") {
            icf.setup = setup(&mut l)?;
        } else if starts(line, "'RESULTS DISPLAY") {
            icf.display_at = Some(l.here());
            skip_to(&mut l, "'END results display", "results display")?;
        } else if starts(line, "'ACCESS SPECIFICATIONS") {
            icf.specs.extend(specs(&mut l)?);
        } else if starts(line, "'MANAGER LIST") {
            icf.managers = Some(managers(&mut l)?);
        } else if starts(line, "version") {
            // The closing version line.
        } else {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{line}' is not a section of an Iometer configuration file ('TEST SETUP, 'RESULTS DISPLAY, 'ACCESS SPECIFICATIONS or 'MANAGER LIST)"),
            ));
        }
    }
    Ok(icf)
}

/// Lines up to and including `end`.
fn skip_to(l: &mut Lines<'_>, end: &str, what: &str) -> Result<(), IometerError> {
    let from = l.here();
    while let Some(line) = l.take() {
        if same(line, end) {
            return Ok(());
        }
    }
    Err(IometerError::syntax(
        &from,
        format!("the {what} has no {end} line"),
    ))
}

/// The test setup's settings, up to `'END test setup`.
fn setup(l: &mut Lines<'_>) -> Result<Vec<Pair>, IometerError> {
    let mut out = Vec::new();
    loop {
        let key = l.comment("test setup")?;
        if same(key, "'END test setup") {
            return Ok(out);
        }
        out.push(l.value(key));
    }
}

/// The access specifications, up to `'END access specifications`.
fn specs(l: &mut Lines<'_>) -> Result<Vec<Spec>, IometerError> {
    let mut out = Vec::new();
    loop {
        let key = l.comment("access specifications")?;
        if same(key, "'END access specifications") {
            return Ok(out);
        }
        if !same(key, "'Access specification name,default assignment") {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{key}': expected 'Access specification name,default assignment or 'END access specifications"),
            ));
        }
        let p = l.value(key);
        let (name, assignment) = match p.value.split_once(',') {
            Some((n, a)) => (n.trim(), a.trim()),
            None => (p.value.trim(), ""),
        };
        if name.is_empty() {
            return Err(IometerError::syntax(
                &p.at,
                "an access specification without a name (expected NAME,ASSIGNMENT)",
            ));
        }
        let heading = l.comment("access specifications")?;
        let compact: String = heading.chars().filter(|c| !c.is_whitespace()).collect();
        let want: String = SPEC_HEADING.chars().filter(|c| *c != ' ').collect();
        if !same(&compact, &want) {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{heading}': expected the heading of the specification's lines, {SPEC_HEADING}"),
            ));
        }
        let mut lines = Vec::new();
        while let Some(next) = l.peek() {
            if is_comment(next) {
                break;
            }
            l.next += 1;
            if !next.is_empty() {
                lines.push(spec_line(next, &l.here())?);
            }
        }
        out.push(Spec {
            name: name.to_string(),
            assignment: assignment.to_string(),
            at: p.at,
            lines,
        });
    }
}

/// One line of an access specification: eight whole numbers separated by commas (a
/// trailing comma allowed).
fn spec_line(text: &str, at: &Location) -> Result<SpecLine, IometerError> {
    let mut fields: Vec<&str> = text.split(',').map(str::trim).collect();
    if fields.len() == SPEC_FIELDS + 1 && fields[SPEC_FIELDS].is_empty() {
        fields.pop();
    }
    if fields.len() != SPEC_FIELDS {
        return Err(IometerError::syntax(
            at,
            format!(
                "'{text}': an access specification line has {SPEC_FIELDS} numbers ({}), this one {}",
                &SPEC_HEADING[1..],
                fields.len()
            ),
        ));
    }
    let mut n = [0i64; SPEC_FIELDS];
    let names: Vec<&str> = SPEC_HEADING[1..].split(',').collect();
    for (i, f) in fields.iter().enumerate() {
        n[i] = f.parse().map_err(|_| {
            IometerError::syntax(at, format!("{}: '{f}' is not a whole number", names[i]))
        })?;
    }
    let [size, pct, reads, random, delay, burst, align, reply] = n;
    Ok(SpecLine {
        size,
        pct,
        reads,
        random,
        delay,
        burst,
        align,
        reply,
        at: at.clone(),
    })
}

/// The managers, up to `'END manager list`.
fn managers(l: &mut Lines<'_>) -> Result<Vec<Manager>, IometerError> {
    let mut out: Vec<Manager> = Vec::new();
    loop {
        let key = l.comment("manager list")?;
        if same(key, "'END manager list") {
            return Ok(out);
        }
        if same(key, "'Manager ID, manager name") || same(key, "'Manager ID,manager name") {
            let p = l.value(key);
            let name = p.value.split_once(',').map_or("", |(_, n)| n).trim();
            out.push(Manager {
                name: name.to_string(),
                at: p.at,
                workers: Vec::new(),
            });
            continue;
        }
        let Some(m) = out.last_mut() else {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{key}': expected 'Manager ID, manager name first"),
            ));
        };
        if same(key, "'Manager network address") {
            l.value(key);
        } else if same(key, "'Worker") {
            let p = l.value(key);
            m.workers.push(worker(l, p)?);
        } else if same(key, "'End manager") {
            // The next manager, or the end of the list, follows.
        } else {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{key}' is not a setting of a manager ('Manager network address, 'Worker, 'End manager)"),
            ));
        }
    }
}

/// One worker after its `'Worker` line, up to `'End worker`.
fn worker(l: &mut Lines<'_>, name: Pair) -> Result<Worker, IometerError> {
    let mut w = Worker {
        name: name.value,
        at: name.at,
        kind: None,
        settings: Vec::new(),
        specs: None,
        targets: None,
    };
    loop {
        let key = l.comment("worker")?;
        if same(key, "'End worker") {
            return Ok(w);
        } else if same(key, "'Worker type") {
            w.kind = Some(l.value(key));
        } else if same(key, "'Default target settings for worker") {
            loop {
                let k = l.comment("worker's default target settings")?;
                if same(k, "'End default target settings for worker") {
                    break;
                }
                w.settings.push(l.value(k));
            }
        } else if same(key, "'Assigned access specs") {
            let mut names = Vec::new();
            loop {
                let Some(line) = l.take_filled() else {
                    return Err(IometerError::syntax(
                        &w.at,
                        "the worker's assigned access specs have no 'End assigned access specs line",
                    ));
                };
                if same(line, "'End assigned access specs") {
                    break;
                }
                names.push((line.to_string(), l.here()));
            }
            w.specs = Some(names);
        } else if same(key, "'Target assignments") {
            w.targets = Some(targets(l)?);
        } else {
            return Err(IometerError::syntax(
                &l.here(),
                format!("'{key}' is not a setting of a worker ('Worker type, 'Default target settings for worker, 'Assigned access specs, 'Target assignments, 'End worker)"),
            ));
        }
    }
}

/// A worker's targets, up to `'End target assignments`.
fn targets(l: &mut Lines<'_>) -> Result<Vec<Target>, IometerError> {
    let mut out: Vec<Target> = Vec::new();
    loop {
        let key = l.comment("worker's target assignments")?;
        if same(key, "'End target assignments") {
            return Ok(out);
        } else if same(key, "'Target") {
            let p = l.value(key);
            out.push(Target {
                name: p.value,
                kind: String::new(),
                at: p.at,
            });
        } else if same(key, "'Target type") {
            let p = l.value(key);
            match out.last_mut() {
                Some(t) => t.kind = p.value,
                None => {
                    return Err(IometerError::syntax(
                        &p.at,
                        "a target type before any 'Target",
                    ))
                }
            }
        } else if same(key, "'Target manager ID, manager name") {
            l.value(key);
        } else if same(key, "'End target") {
            // The next target, or the end of the assignments, follows.
        } else {
            return Err(IometerError::syntax(
                &l.here(),
                format!(
                    "'{key}' is not a setting of a target ('Target, 'Target type, 'End target)"
                ),
            ));
        }
    }
}
