//! vdbench's parameter-file grammar: lines of `key=value` pairs separated by commas,
//! each definition starting with its kind (`sd=NAME`, `wd=NAME`, `rd=NAME`, `hd=NAME`)
//! and running on over continuation lines, general parameters (`compratio=2`) before
//! the first definition. Values are one word or a parenthesised list (`(4k,50,8k,50)`,
//! `(sd1,sd2)`). Comments: a line starting with `*`, `#` or `/`, and the rest of a line
//! after a blank followed by one of those.
//!
//! This reads structure only; what a parameter means is `map`'s.

use crate::fio::Location;

use super::VdbenchError;

/// One `key=value` as written: the key in lower case, the value's items (one for a
/// plain value, several for a parenthesised list) and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub key: String,
    pub values: Vec<String>,
    pub at: Location,
}

impl Param {
    /// The value as written (a list back in its parentheses).
    pub fn text(&self) -> String {
        match self.values.as_slice() {
            [one] => one.clone(),
            many => format!("({})", many.join(",")),
        }
    }
}

/// What a definition defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Host,
    Storage,
    Workload,
    Run,
    /// File-system definitions (`fsd`, `fwd`) and replay groups (`rg`): refused by `map`.
    Other,
}

/// One definition: its kind, its name (the value of its first key), and its parameters
/// after the first, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub kind: Kind,
    pub keyword: String,
    pub name: String,
    pub params: Vec<Param>,
    pub at: Location,
}

impl Definition {
    /// The last value given for `key`.
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.params.iter().rev().find(|p| p.key == key)
    }
}

/// A parameter file: the general parameters, then the definitions in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamFile {
    pub general: Vec<Param>,
    pub definitions: Vec<Definition>,
}

fn kind_of(key: &str) -> Option<Kind> {
    Some(match key {
        "hd" | "host" => Kind::Host,
        "sd" => Kind::Storage,
        "wd" => Kind::Workload,
        "rd" => Kind::Run,
        "fsd" | "fwd" | "rg" => Kind::Other,
        _ => return None,
    })
}

/// The line without its comment; None for a comment line.
fn strip_comment(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with(['*', '#', '/']) {
        return None;
    }
    let b = t.as_bytes();
    let end = (1..b.len())
        .find(|&i| b[i - 1].is_ascii_whitespace() && matches!(b[i], b'*' | b'#' | b'/'))
        .unwrap_or(b.len());
    Some(t[..end].trim_end())
}

/// Split `text` (one logical line without blanks) into `key=value` items at the commas
/// outside parentheses.
fn split_items(text: &str, at: &Location) -> Result<Vec<Param>, VdbenchError> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(VdbenchError::syntax(at, "a ')' without its '('"));
                }
            }
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(VdbenchError::syntax(at, "a '(' without its ')'"));
    }
    items.push(&text[start..bytes.len()]);
    let mut out = Vec::new();
    for item in items.into_iter().filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(VdbenchError::syntax(
                at,
                format!("'{item}' is not a parameter (expected key=value)"),
            ));
        };
        let key = key.to_ascii_lowercase();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(VdbenchError::syntax(
                at,
                format!("'{key}' is not a parameter name"),
            ));
        }
        let values: Vec<String> = match value.strip_prefix('(') {
            Some(inner) => {
                let Some(inner) = inner.strip_suffix(')') else {
                    return Err(VdbenchError::syntax(
                        at,
                        format!("{key}={value}: text after the closing ')'"),
                    ));
                };
                inner.split(',').map(|v| v.trim().to_string()).collect()
            }
            None if value.contains(['(', ')']) => {
                return Err(VdbenchError::syntax(
                    at,
                    format!("{key}={value}: a list must be the whole value, e.g. {key}=(a,b)"),
                ))
            }
            None => vec![value.to_string()],
        };
        if values.iter().any(|v| v.is_empty()) {
            return Err(VdbenchError::syntax(
                at,
                format!("{key}={value}: an empty value"),
            ));
        }
        out.push(Param {
            key,
            values,
            at: at.clone(),
        });
    }
    Ok(out)
}

/// Parse the text of a parameter file named `file` (for locations).
pub fn parse_text(text: &str, file: &str) -> Result<ParamFile, VdbenchError> {
    let mut out = ParamFile::default();
    // Whether the line before ended with a comma (the definition goes on).
    let mut open = false;
    for (n, line) in text.lines().enumerate() {
        let at = Location {
            file: file.to_string(),
            line: n + 1,
            included: false,
        };
        let Some(body) = strip_comment(line) else {
            continue;
        };
        let body: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        let items = split_items(&body, &at)?;
        let Some(first) = items.first() else {
            continue;
        };
        let starts = kind_of(&first.key).filter(|_| !open);
        open = body.ends_with(',');
        match starts {
            Some(kind) => {
                let name = match first.values.as_slice() {
                    [one] => one.clone(),
                    _ => {
                        return Err(VdbenchError::syntax(
                            &at,
                            format!(
                                "{}={}: a definition's name is one word",
                                first.key,
                                first.text()
                            ),
                        ))
                    }
                };
                // A name defined twice would make two streams or disks of one name.
                if let Some(first) = out.definitions.iter().find(|d| {
                    d.kind == kind
                        && d.keyword == first.key
                        && d.name == name
                        && !name.eq_ignore_ascii_case("default")
                }) {
                    return Err(VdbenchError::syntax(
                        &at,
                        format!(
                            "{}={name}: defined again (first at line {}); each {} needs a name of its own",
                            first.keyword, first.at.line, first.keyword
                        ),
                    ));
                }
                out.definitions.push(Definition {
                    kind,
                    keyword: first.key.clone(),
                    name,
                    params: items[1..].to_vec(),
                    at,
                });
            }
            None => match out.definitions.last_mut() {
                Some(d) => d.params.extend(items),
                None => out.general.extend(items),
            },
        }
    }
    Ok(out)
}
